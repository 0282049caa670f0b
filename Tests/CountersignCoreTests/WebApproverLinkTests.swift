import CountersignCore
import Testing

@Suite("links to the web approver")
struct WebApproverLinkTests {
    @Test("a broker at a loopback address is linked at localhost, where browsers keep passkeys")
    func loopbackIsLocalhost() {
        #expect(
            WebApproverLink.pairing(broker: "http://127.0.0.1:8080/", apiKeyID: "ck_1", user: "a b")
                == "http://localhost:8080/approve/#pair&api_key=ck_1&user=a%20b")
        #expect(
            WebApproverLink.pairing(broker: "http://[::1]:8080", apiKeyID: "ck_1", user: "a").hasPrefix(
                "http://localhost:8080/approve/"))
        #expect(
            WebApproverLink.enrollment(broker: "https://auth.example.com", apiKeyID: "ck_1", user: "a", token: "t")
                == "https://auth.example.com/approve/#enroll=t&api_key=ck_1&user=a")
        #expect(
            WebApproverLink.pairing(broker: "http://192.0.2.7:8080", apiKeyID: "k", user: "a").hasPrefix(
                "http://192.0.2.7:8080/"))
        #expect(
            WebApproverLink.pairing(broker: "http://127.example.com:8080", apiKeyID: "k", user: "a").hasPrefix(
                "http://127.example.com:8080/"), "a name is not an address")
    }
}
