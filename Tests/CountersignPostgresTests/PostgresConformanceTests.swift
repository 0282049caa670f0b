import CountersignPostgresTesting
import CountersignStore
import CountersignStoreTesting
import Foundation
import Testing

@testable import CountersignPostgres

@Suite("PostgreSQL store")
struct PostgresConformanceTests {
    @Test("conformance", arguments: StoreConformance.cases)
    func conformance(_ check: StoreConformance.Case) async throws {
        try await TestPostgres.withStore { store in try await check.run(store) }
    }
}
