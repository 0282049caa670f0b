import CountersignStore
import Foundation
import PostgresNIO
import Testing

@testable import CountersignPostgres

/// The database URL as libpq reads one, with several hosts; no database needed.
@Suite("PostgreSQL URLs and failures")
struct PostgresSettingsTests {
    @Test("one host, the default port, a percent-encoded password")
    func oneHost() throws {
        let settings = try PostgresSettings(url: "postgres://broker:p%40ss@db.example:6432/countersign")
        #expect(settings.servers.map(\.description) == ["db.example:6432"])
        #expect(settings.username == "broker")
        #expect(settings.password == "p@ss")
        #expect(settings.database == "countersign")
        #expect(settings.requireWritable)
        #expect(try PostgresSettings(url: "postgresql://u@h/d").servers.map(\.port) == [5432])
    }

    @Test("several hosts are tried in the order given; IPv6 in brackets")
    func severalHosts() throws {
        let settings = try PostgresSettings(
            url: "postgres://u:pw@10.0.0.1:5433,[::1]:5434,standby/db?sslmode=disable&target_session_attrs=read-write")
        #expect(settings.servers.map(\.host) == ["10.0.0.1", "::1", "standby"])
        #expect(settings.servers.map(\.port) == [5433, 5434, 5432])
        #expect(settings.servers[1].description == "[::1]:5434")
        #expect(settings.password == "pw")
        #expect(settings.database == "db")
        #expect(settings.endpoint == "10.0.0.1:5433,[::1]:5434,standby:5432/db")
    }

    @Test("target_session_attrs: read-write (the default), primary, any; nothing else")
    func sessionAttributes() throws {
        #expect(try PostgresSettings(url: "postgres://u@h/d?target_session_attrs=any").requireWritable == false)
        #expect(try PostgresSettings(url: "postgres://u@h/d?target_session_attrs=primary").requireWritable)
        #expect(throws: StoreError.self) {
            try PostgresSettings(url: "postgres://u@h/d?target_session_attrs=standby")
        }
    }

    @Test("what is not a postgres URL is refused, saying what to give")
    func refusals() throws {
        for url in ["mysql://u@h/d", "postgres://h/d", "postgres://u@/d", "postgres://u@a,,b/d", "h:5432"] {
            #expect(throws: StoreError.self, "\(url)") { try PostgresSettings(url: url) }
        }
    }

    @Test("a failure says whether the operation can run again on another connection")
    func fates() {
        #expect(PostgresStore.fate(of: PostgresConnections.Closed()) == .neverSent)
        #expect(PostgresStore.fate(of: StoreError(.conflict, "decided")) == .statementFailed)
        #expect(PostgresStore.fate(of: CancellationError()) == .statementFailed)
    }
}
