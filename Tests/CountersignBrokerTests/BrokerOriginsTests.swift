import CountersignBroker
import CountersignCore
import Testing

/// The origins proofs may name: a broker on loopback answers at each of
/// its loopback names, so its web approver, linked at localhost, works
/// whatever `--public-url` names it (as the container's README command does).
@Suite("the broker's origins")
struct BrokerOriginsTests {
    @Test("a loopback issuer brings its loopback aliases; a named one only itself")
    func aliases() throws {
        let loopback = try BrokerConfiguration(publicURLs: ["http://127.0.0.1:8080"]).origins()
        #expect(loopback.issuer == "http://127.0.0.1:8080")
        for alias in ["http://localhost:8080", "http://[::1]:8080", "http://127.0.0.1:8080"] {
            #expect(loopback.origins.contains(Origin(url: alias)!), "\(alias)")
        }
        #expect(!loopback.origins.contains(Origin(url: "http://localhost:8081")!))
        let named = try BrokerConfiguration(publicURLs: ["https://auth.example.com"]).origins()
        #expect(named.origins == [Origin(url: "https://auth.example.com")!])
        let lookalike = try BrokerConfiguration(publicURLs: ["https://127.example.com"]).origins()
        #expect(lookalike.origins == [Origin(url: "https://127.example.com")!], "a name is no loopback address")
        // Known first elsewhere, a broker keeps the list it was given.
        let elsewhere = try BrokerConfiguration(publicURLs: ["https://192.0.2.10", "http://127.0.0.1:8080"]).origins()
        #expect(elsewhere.origins == [Origin(url: "https://192.0.2.10")!, Origin(url: "http://127.0.0.1:8080")!])
    }
}
