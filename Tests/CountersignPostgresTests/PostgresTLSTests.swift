import CountersignCore
import CountersignPostgresTesting
import CountersignStore
import Foundation
import PostgresNIO
import Testing

@testable import CountersignPostgres

/// sslmode and sslrootcert against the test cluster, whose certificate is
/// signed by a CA of its own for the host name `localhost` only.
@Suite("PostgreSQL TLS")
struct PostgresTLSTests {
    /// The cluster's URL for `host`, with these query parameters.
    func url(host: String, user: String? = nil, _ parameters: String) throws -> String {
        var components = URLComponents(string: try TestPostgres.clusterURL())!
        components.host = host
        if let user { components.user = user }
        components.query = parameters
        return components.string!
    }

    /// How long a connection that should succeed may take: generous, for a
    /// busy machine. One that should be refused is given ``refusalWait``
    /// (the store keeps trying a refused connection, so a refusal is
    /// seen only as no answer).
    static let answerWait: Duration = .seconds(90)
    static let refusalWait: Duration = .seconds(10)

    /// Whether a store on `url` runs a query over TLS; nil when it cannot
    /// run one within `wait`.
    func encrypted(_ url: String, within wait: Duration = answerWait) async throws -> Bool? {
        try await signedIn(url, within: wait).map { $0.encrypted }
    }

    /// Whether a store on `url` runs a query over TLS, and as which role;
    /// nil when it cannot run one within `wait`.
    func signedIn(_ url: String, within wait: Duration = answerWait) async throws -> (encrypted: Bool, role: String)? {
        // A busy machine's TLS handshakes can outlast the default 5 s
        // connect wait, again and again; a refusal is at once either way.
        let store = try PostgresStore(
            url: url, logger: TestPostgres.logger, maximumConnections: 2, patience: TestPostgres.patient)
        let logger = TestPostgres.logger
        let outcome = await withTaskGroup(of: (encrypted: Bool, role: String)?.self) { group in
            group.addTask {
                // The store fails at once while it cannot connect, and
                // keeps trying: a refusal is an answer that never comes.
                while !Task.isCancelled {
                    let answer = try? await store.read { db in
                        try await db.row(
                            "SELECT ssl, current_user AS role FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                            logger: logger
                        ).map { (try $0.value("ssl", as: Bool.self), try $0.value("role", as: String.self)) }
                    }
                    if let answer { return answer }
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: wait)
                return nil
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        await store.close()
        return outcome
    }

    @Test("verify-full with the cluster's CA connects to the host its certificate names, over TLS")
    func verifyFull() async throws {
        let ca = try TestPostgres.certificateAuthority()
        #expect(try await encrypted(url(host: "localhost", "sslmode=verify-full&sslrootcert=\(ca)")) == true)
    }

    @Test("verify-full refuses another host name; verify-ca, which checks only the chain, accepts it")
    func hostName() async throws {
        let ca = try TestPostgres.certificateAuthority()
        #expect(
            try await encrypted(
                url(host: "127.0.0.1", "sslmode=verify-full&sslrootcert=\(ca)"), within: Self.refusalWait) == nil)
        #expect(try await encrypted(url(host: "127.0.0.1", "sslmode=verify-ca&sslrootcert=\(ca)")) == true)
        #expect(try await encrypted(url(host: "127.0.0.1", "sslmode=require&sslrootcert=\(ca)")) == true)
    }

    @Test("without sslrootcert, verify-full trusts only the system's CAs, which did not sign the cluster's")
    func systemRoots() async throws {
        #expect(try await encrypted(url(host: "localhost", "sslmode=verify-full"), within: Self.refusalWait) == nil)
    }

    @Test("require and prefer encrypt without checking the certificate; disable does not encrypt")
    func unverified() async throws {
        #expect(try await encrypted(url(host: "127.0.0.1", "sslmode=require")) == true)
        #expect(try await encrypted(url(host: "127.0.0.1", "sslmode=prefer")) == true)
        #expect(try await encrypted(url(host: "127.0.0.1", "sslmode=disable")) == false)
    }

    @Test("a client certificate signs in a role the server admits by certificate only; without it, no connection")
    func clientCertificate() async throws {
        let ca = try TestPostgres.certificateAuthority()
        let client = try TestPostgres.clientCertificate()
        let signedIn = try await signedIn(
            url(
                host: "localhost", user: "countersign_cert",
                "sslmode=verify-full&sslrootcert=\(ca)&sslcert=\(client.certificate)&sslkey=\(client.key)"))
        #expect(signedIn?.encrypted == true && signedIn?.role == "countersign_cert")
        #expect(
            try await encrypted(
                url(host: "localhost", user: "countersign_cert", "sslmode=verify-full&sslrootcert=\(ca)"),
                within: Self.refusalWait) == nil)
    }

    @Test("sslcert without sslkey, an unreadable one, or one with sslmode=disable is refused before connecting")
    func badClientCertificate() throws {
        let client = try TestPostgres.clientCertificate()
        for parameters in [
            "sslmode=require&sslcert=\(client.certificate)",
            "sslmode=require&sslkey=\(client.key)",
            "sslmode=require&sslcert=/nonexistent/client.pem&sslkey=\(client.key)",
            "sslmode=require&sslcert=\(client.certificate)&sslkey=/nonexistent/client.key",
            "sslmode=require&sslcert=\(client.key)&sslkey=\(client.key)",
            "sslmode=disable&sslcert=\(client.certificate)&sslkey=\(client.key)",
        ] {
            #expect(throws: StoreError.self, "\(parameters)") {
                try PostgresStore(url: try url(host: "localhost", parameters), logger: TestPostgres.logger)
            }
        }
    }

    @Test("an sslrootcert that cannot be read, or an unknown sslmode, is refused before connecting")
    func badParameters() throws {
        #expect(throws: StoreError.self) {
            try PostgresStore(
                url: try url(host: "localhost", "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"),
                logger: TestPostgres.logger)
        }
        #expect(throws: StoreError.self) {
            try PostgresStore(url: try url(host: "localhost", "sslmode=verify-everything"), logger: TestPostgres.logger)
        }
    }
}
