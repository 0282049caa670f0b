import CountersignStore
import Foundation
import NIOCore
import NIOSSL
import PostgresNIO

/// Where the store's database is and how to reach it, read from a
/// `postgres://` URL as libpq reads one.
struct PostgresSettings: Sendable {
    /// One server the URL names.
    struct Server: Sendable, CustomStringConvertible {
        let host: String
        let port: Int
        var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// TLS as the URL's `sslmode` asks for it.
    enum TLS: Sendable {
        case disable
        case prefer(TLSConfiguration)
        case require(TLSConfiguration)

        /// The TLS of a connection; the context is made once, here.
        func connectionTLS() throws -> PostgresConnection.Configuration.TLS {
            do {
                switch self {
                case .disable: return .disable
                case .prefer(let configuration): return .prefer(try NIOSSLContext(configuration: configuration))
                case .require(let configuration): return .require(try NIOSSLContext(configuration: configuration))
                }
            } catch {
                throw StoreError(.backend, "cannot set up TLS for PostgreSQL: \(error)")
            }
        }
    }

    /// The servers to try, in order, for each new connection.
    var servers: [Server]
    var username: String
    var password: String?
    var database: String?
    var tls: TLS
    /// Whether a server must take writes (`target_session_attrs=read-write`,
    /// the default; `any` takes any server).
    var requireWritable = true
    /// Connections kept open.
    var size = 1
    /// How long an operation waits for a connection to come free while
    /// none comes back to the pool nor is made (while they do, it waits its
    /// turn, 30 s more at most).
    var acquireWait = PostgresStore.Patience().connectionWait
    /// How long a query may wait for its answer before its connection is
    /// closed under it (a database that stopped answering: a cut network, a
    /// stopped server machine).
    var queryDeadline = PostgresStore.Patience().answerWait
    /// How long making a connection may take, TLS and sign-in included.
    var connectTimeout = PostgresStore.Patience().connectWait
    /// Connections made at once, when many are missing (at start, after an outage).
    var concurrentConnects = 4

    /// `host:port/database` of the first server, for messages (never the password).
    var endpoint: String {
        servers.map(\.description).joined(separator: ",") + "/" + (database ?? "")
    }

    /// Reads `url`: `postgres://user[:password]@host[:port][,host[:port]…]/database`,
    /// with libpq's `sslmode`, `sslrootcert`, `sslcert`, `sslkey` and
    /// `target_session_attrs` query parameters.
    init(url: String) throws {
        let notURL = StoreError(
            .backend, "not a postgres:// URL: give postgres://user[:password]@host[:port][,host[:port]…]/database")
        // The hosts are read here; URLComponents reads the rest of a URL
        // made of the first host alone (it takes no list of hosts).
        guard let schemeEnd = url.range(of: "://") else { throw notURL }
        let afterScheme = url[schemeEnd.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
        let hostList = authority[hostsStart...].split(separator: ",", omittingEmptySubsequences: false)
        guard let first = hostList.first else { throw notURL }
        let single = url[..<hostsStart] + first + afterScheme[authorityEnd...]
        guard let components = URLComponents(string: String(single)),
            ["postgres", "postgresql"].contains(components.scheme), components.host?.isEmpty == false,
            let user = components.user
        else { throw notURL }
        servers = try hostList.map { try Self.server(String($0)) }
        username = user.removingPercentEncoding ?? user
        password = components.password?.removingPercentEncoding
        database = components.path.count > 1 ? String(components.path.dropFirst()) : nil
        let parameter = { (name: String) in components.queryItems?.first { $0.name == name }?.value }
        tls = try Self.tls(
            mode: parameter("sslmode") ?? "prefer", rootCertificate: parameter("sslrootcert"),
            clientCertificate: parameter("sslcert"), clientKey: parameter("sslkey"))
        switch parameter("target_session_attrs") ?? "read-write" {
        case "read-write", "primary": requireWritable = true
        case "any": requireWritable = false
        case let other:
            throw StoreError(.backend, "unknown target_session_attrs \(other): give read-write (the default) or any")
        }
    }

    /// One `host[:port]` of the list (an IPv6 address in brackets).
    private static func server(_ text: String) throws -> Server {
        guard let components = URLComponents(string: "postgres://" + text), let host = components.host,
            !host.isEmpty, components.path.isEmpty
        else { throw StoreError(.backend, "not a host[:port] in the PostgreSQL URL: \(text)") }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return Server(host: bare, port: components.port ?? 5432)
    }

    /// TLS as libpq's `sslmode` means it: `prefer` and `require` encrypt
    /// without checking who answers (unless `sslrootcert` is given to
    /// `require`, which then acts as `verify-ca`), `verify-ca` checks the
    /// certificate chain, `verify-full` the host name too. `sslrootcert` names
    /// a PEM file of the CAs to trust instead of the system's. `sslcert` and
    /// `sslkey` name the PEM files of a client certificate (with its chain)
    /// and its key, for a server that authenticates clients by certificate.
    static func tls(mode: String, rootCertificate: String?, clientCertificate: String? = nil, clientKey: String? = nil)
        throws -> TLS
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        // A connection closed because its server went silent waits this
        // long for the server's TLS close, not the default 5 s.
        configuration.shutdownTimeout = .milliseconds(500)
        if let rootCertificate {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw StoreError(.backend, "cannot read the sslrootcert file \(rootCertificate)")
            }
            configuration.trustRoots = .file(rootCertificate)
        }
        switch (clientCertificate, clientKey) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            guard mode != "disable" else { throw StoreError(.backend, "sslcert and sslkey need TLS: sslmode=disable") }
            (configuration.certificateChain, configuration.privateKey) = try clientIdentity(
                certificate: certificate, key: key)
        default:
            throw StoreError(.backend, "give sslcert and sslkey together: a client certificate and its key")
        }
        switch mode {
        case "disable":
            return .disable
        case "allow", "prefer":
            configuration.certificateVerification = .none
            return .prefer(configuration)
        case "require" where rootCertificate == nil:
            configuration.certificateVerification = .none
            return .require(configuration)
        case "require", "verify-ca":
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        case "verify-full":
            return .require(configuration)
        default:
            throw StoreError(.backend, "unknown sslmode \(mode)")
        }
    }

    /// A client certificate chain and its private key, from PEM files.
    private static func clientIdentity(certificate: String, key: String) throws -> (
        [NIOSSLCertificateSource], NIOSSLPrivateKeySource
    ) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw StoreError(.backend, "cannot read the sslcert file \(certificate): \(error)")
        }
        guard !chain.isEmpty else { throw StoreError(.backend, "the sslcert file \(certificate) has no certificate") }
        do {
            return (chain.map { .certificate($0) }, .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
        } catch {
            throw StoreError(.backend, "cannot read the sslkey file \(key): \(error)")
        }
    }
}
