import CountersignCore
import Testing

@Suite("origins: which name the same broker")
struct OriginTests {
    static func origin(_ url: String) -> Origin { Origin(url: url)! }

    @Test("the same origin, or any loopback name of a loopback broker on its scheme and port")
    func sameBroker() {
        let loopback = Self.origin("http://127.0.0.1:8080")
        for alias in ["http://localhost:8080", "http://127.0.0.1:8080/", "http://[::1]:8080", "http://127.0.0.2:8080"] {
            #expect(Self.origin(alias).names(sameBrokerAs: loopback), "\(alias)")
        }
        for other in [
            "http://localhost:8081", "https://localhost:8080", "http://192.0.2.7:8080", "http://127.example.com:8080",
            "http://127.0.0.1.example.com:8080", "http://127.0.0:8080",
        ] {
            #expect(!Self.origin(other).names(sameBrokerAs: loopback), "\(other)")
        }
        let named = Self.origin("https://auth.example.com")
        #expect(Self.origin("https://auth.example.com:443").names(sameBrokerAs: named))
        #expect(!Self.origin("https://localhost").names(sameBrokerAs: named), "a name is no loopback alias")
        #expect(!Self.origin("https://evil.example.com").names(sameBrokerAs: named))
    }
}

@Suite("same-origin rule")
struct SameOriginRuleTests {
    let origins: Set<Origin> = [Origin(url: "https://broker.example")!]

    @Test("each header that is sent must name this site")
    func eachHeaderAgrees() {
        let allows = { (site: String?, origin: String?) in
            SameOriginRule.allows(fetchSite: site, origin: origin, origins: origins)
        }
        #expect(allows("same-origin", "https://broker.example"))
        #expect(allows("same-origin", nil))
        #expect(allows(nil, "https://broker.example"))
        #expect(allows(nil, nil), "no browser's cross-site request")
        // A foreign Origin is refused whatever Sec-Fetch-Site claims.
        #expect(!allows("same-origin", "https://attacker.example"))
        #expect(!allows("same-origin", "http://broker.example"))
        #expect(!allows("same-origin", "not a url"))
        #expect(!allows("same-site", "https://broker.example"))
        #expect(!allows("cross-site", nil))
        #expect(!allows("none", nil))
        // Origin: null only with Sec-Fetch-Site vouching for it.
        #expect(allows("same-origin", "null"))
        #expect(!allows(nil, "null"))
        #expect(!allows("cross-site", "null"))
    }
}
