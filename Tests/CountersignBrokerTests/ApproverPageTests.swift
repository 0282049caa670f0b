import CountersignBroker
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

/// How the broker serves the web approver's files.
@Suite("web approver: files and headers")
struct ApproverPageTests {
    @Test("the page lives at /approve/ under a strict CSP; the bare path moves there")
    func page() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            let bare = try await client.execute(uri: "/approve", method: .get)
            #expect(bare.status == .movedPermanently && bare.headers[.location] == "/approve/")
            let page = try await client.execute(uri: "/approve/", method: .get)
            #expect(page.status == .ok && page.headers[.contentType] == "text/html; charset=utf-8")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            for directive in [
                "default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'",
            ] {
                #expect(policy.contains(directive))
            }
            #expect(!policy.contains("unsafe"), "no inline script or eval")
            #expect(page.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            let html = String(buffer: page.body)
            #expect(!html.contains("<script>") && !html.contains("style="), "nothing inline the CSP would block")
            #expect(html.contains(#"<script type="module" src="app.js"></script>"#))
        }
    }

    @Test("each file with its type; an ETag that answers 304; anything else 404")
    func files() async throws {
        let broker = try await TestBroker()
        try await broker.test { client in
            for (file, type) in [
                ("app.js", "text/javascript; charset=utf-8"), ("sw.js", "text/javascript; charset=utf-8"),
                ("manifest.webmanifest", "application/manifest+json"), ("icon-192.png", "image/png"),
                ("app.css", "text/css; charset=utf-8"),
            ] {
                let response = try await client.execute(uri: "/approve/\(file)", method: .get)
                #expect(response.status == .ok && response.headers[.contentType] == type, "\(file)")
                let etag = try #require(response.headers[.eTag])
                let again = try await client.execute(
                    uri: "/approve/\(file)", method: .get, headers: [.ifNoneMatch: etag])
                #expect(again.status == .notModified && again.body.readableBytes == 0, "\(file) unchanged")
            }
            for missing in ["nope.js", "..%2Fdevice-broker", "%2e%2e", "index.html.bak"] {
                #expect(try await client.execute(uri: "/approve/\(missing)", method: .get).status == .notFound)
            }
        }
    }
}
