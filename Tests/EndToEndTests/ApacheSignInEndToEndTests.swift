import CountersignClient
import CountersignCore
import Foundation
import Testing

/// Sign-in by approval in front of a site, through Debian's apache2 and
/// libapache2-mod-auth-openidc, configured with the very block that
/// docs/sign-in-to-apps.md gives (its addresses replaced), and a person's
/// browser played by scripts/sign-in-through.py.
@Suite("end to end: Apache's mod_auth_openidc signs in through the broker", .serialized)
struct ApacheSignInEndToEndTests {
    /// An Apache serving a protected page that shows who signed in.
    final class Apache {
        let port: Int
        let directory: URL
        let process: RunningProcess
        var url: String { "http://127.0.0.1:\(port)" }

        init(broker: LiveBroker) async throws {
            for path in ["/usr/sbin/apache2", "/usr/lib/apache2/modules/mod_auth_openidc.so"] {
                guard FileManager.default.fileExists(atPath: path) else {
                    throw ProcessFailure(
                        "\(path) is missing: scripts/test.sh installs apache2 and libapache2-mod-auth-openidc")
                }
            }
            port = try freePort()
            // Apache's workers run as nobody, who may not enter the
            // suite's TMPDIR (root's): a directory of its own under /tmp.
            directory = URL(fileURLWithPath: "/tmp/countersign-apache-\(UUID().uuidString)")
            let site = directory.appendingPathComponent("site")
            let protected = site.appendingPathComponent("protected")
            try FileManager.default.createDirectory(at: protected, withIntermediateDirectories: true)
            try "signed out\n".write(to: site.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
            try #"<p>user: <!--#echo var="REMOTE_USER" --></p><p>acr: <!--#echo var="OIDC_CLAIM_acr" --></p>"#
                .write(to: protected.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
            let run = directory.appendingPathComponent("run")
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            for path in [directory, site, protected] {
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path.path)
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: run.path)
            let here = "http://127.0.0.1:\(port)"
            let documented = try ApacheSignInEndToEndTests.documentedBlock()
                .replacingOccurrences(of: "https://countersign.example.com", with: broker.url)
                .replacingOccurrences(of: "https://wiki.example.com", with: here)
                .replacingOccurrences(of: "ck_WIKI", with: broker.apiKeyID)
                .replacingOccurrences(of: "cs_WIKI_SECRET", with: broker.apiSecret)
                .replacingOccurrences(of: "A_LONG_RANDOM_STRING", with: SecretToken.generate())
            let modules = "/usr/lib/apache2/modules"
            let config = """
                ServerRoot \(directory.path)
                Listen 127.0.0.1:\(port)
                ServerName 127.0.0.1
                PidFile \(run.path)/httpd.pid
                DefaultRuntimeDir \(run.path)
                Mutex file:\(run.path)
                LoadModule mpm_event_module \(modules)/mod_mpm_event.so
                LoadModule authz_core_module \(modules)/mod_authz_core.so
                LoadModule authn_core_module \(modules)/mod_authn_core.so
                LoadModule authz_user_module \(modules)/mod_authz_user.so
                LoadModule auth_openidc_module \(modules)/mod_auth_openidc.so
                LoadModule dir_module \(modules)/mod_dir.so
                LoadModule mime_module \(modules)/mod_mime.so
                LoadModule include_module \(modules)/mod_include.so
                TypesConfig /etc/mime.types
                User nobody
                Group nogroup
                ErrorLog /dev/stderr
                LogLevel warn auth_openidc:info
                DocumentRoot \(site.path)
                DirectoryIndex index.html
                <Directory \(protected.path)>
                    Options +Includes
                    AddOutputFilter INCLUDES .html
                </Directory>
                \(documented)
                """
            let file = directory.appendingPathComponent("httpd.conf")
            try config.write(to: file, atomically: true, encoding: .utf8)
            process = try RunningProcess("/usr/sbin/apache2", ["-f", file.path, "-DFOREGROUND"])
            _ = try await process.waitFor("resuming normal operations", timeout: .seconds(120))
        }

        func stop() {
            process.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// The ```apache block of docs/sign-in-to-apps.md.
    static func documentedBlock() throws -> String {
        let doc = try String(
            contentsOf: scriptsDirectory.deletingLastPathComponent().appendingPathComponent("docs/sign-in-to-apps.md"),
            encoding: .utf8)
        let block = try #require(doc.firstMatch(of: /```apache\n(?<body>[\s\S]*?)```/), "the doc's Apache block")
        return String(block.body)
    }

    /// A broker whose demo app is registered as the doc says, with alice's laptop.
    static func broker() async throws -> (LiveBroker, URL) {
        let broker = try await LiveBroker.start()
        do {
            return (broker, try await broker.enrollMachine(name: "laptop"))
        } catch {
            broker.stop()
            throw error
        }
    }

    static func register(_ broker: LiveBroker, _ apache: Apache) async throws {
        try await OpenIDSignInEndToEndTests.command(
            broker,
            ["apikey", "set-redirect-urls", broker.apiKeyID, apache.url + "/protected/redirect_uri", apache.url + "/"])
        try await OpenIDSignInEndToEndTests.command(
            broker, ["apikey", "set-openid-scopes", broker.apiKeyID, "openid", "profile"])
    }

    /// The person's browser, from `start`, fetching `then` afterwards.
    static func browser(_ start: String, then: [String] = []) throws -> RunningProcess {
        try RunningProcess(
            "/usr/bin/env",
            ["python3", scriptsDirectory.appendingPathComponent("sign-in-through.py").path, start, "alice"]
                + then.flatMap { ["--extra-get", $0] })
    }

    /// The device answers the waiting login with `options`.
    static func answer(_ broker: LiveBroker, _ browser: RunningProcess, laptop: URL, _ options: [String]) async throws {
        let number = try await browser.waitFor(#"number: (\d+)"#, timeout: .seconds(120))
        let pending = try #require(try await broker.backend.events(user: "alice").first { $0.status == .pending })
        let arguments = options == ["--yes"] ? ["--yes", "--match", number] : options
        let agent = try broker.agent(["approve", "--event", pending.ID] + arguments, configDirectory: laptop)
        #expect(try await agent.exitCode(timeout: .seconds(120)) == 0, "\(agent.text)")
    }

    @Test("approved on the device: the page sees REMOTE_USER; signing out goes through the broker's end-session")
    func approvedThenSignedOut() async throws {
        let (broker, laptop) = try await Self.broker()
        defer { broker.stop() }
        let apache = try await Apache(broker: broker)
        defer { apache.stop() }
        try await Self.register(broker, apache)
        let logout =
            apache.url + "/protected/redirect_uri?logout="
            + (apache.url + "/").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let browser = try Self.browser(
            apache.url + "/protected/", then: [apache.url + "/protected/", logout, apache.url + "/protected/"])
        try await Self.answer(broker, browser, laptop: laptop, ["--yes"])
        #expect(try await browser.exitCode(timeout: .seconds(120)) == 0, "\(browser.text)\n\(apache.process.text)")
        let result = try OpenIDSignInEndToEndTests.result(of: browser)
        let app = try #require(result["app"] as? [String: Any], "\(result)")
        #expect(app["url"] as? String == apache.url + "/protected/", "\(result)")
        let page = try #require(app["text"] as? String)
        #expect(page.contains("user: alice") && page.contains("acr: \(ApprovalAuthentication.deviceACR)"), "\(page)")

        let then = try #require(result["then"] as? [[String: Any]], "\(result)")
        #expect((then[0]["text"] as? String)?.contains("user: alice") == true, "the session holds: \(then[0])")
        #expect(then[1]["url"] as? String == apache.url + "/" && then[1]["text"] as? String == "signed out\n")
        #expect(
            (then[1]["history"] as? [String])?.contains { $0.hasPrefix(broker.url + "/oauth/end-session") } == true,
            "signed out at the broker too: \(then[1])")
        #expect(
            (then[2]["url"] as? String)?.hasPrefix(broker.url + "/oauth/authorize") == true,
            "signed out, the page asks again: \(then[2])")
    }

    @Test("refused on the device: with OIDCDefaultURL, a fresh sign-in form, not mod_auth_openidc's error")
    func refused() async throws {
        let (broker, laptop) = try await Self.broker()
        defer { broker.stop() }
        let apache = try await Apache(broker: broker)
        defer { apache.stop() }
        try await Self.register(broker, apache)
        let browser = try Self.browser(apache.url + "/protected/")
        try await Self.answer(broker, browser, laptop: laptop, ["--reject"])
        #expect(try await browser.exitCode(timeout: .seconds(120)) == 0, "\(browser.text)\n\(apache.process.text)")
        let result = try OpenIDSignInEndToEndTests.result(of: browser)
        #expect(result["status"] as? String == "rejected", "\(result)")
        #expect((result["broker_page"] as? String)?.contains("refused") == true, "\(result)")
        let app = try #require(result["app"] as? [String: Any], "\(result)")
        let page = try #require(app["text"] as? String)
        #expect(!page.contains("target_link_uri") && !page.contains("user: alice"), "\(page)")
        #expect((app["url"] as? String)?.hasPrefix(broker.url + "/oauth/authorize") == true, "\(app)")
        #expect(page.contains(#"name="user""#), "the broker's form again: \(page)")
        let events = try await broker.backend.events(user: "alice")
        #expect(events.count == 1 && events.first?.status == .rejected, "nothing else asked: \(events)")
    }
}
