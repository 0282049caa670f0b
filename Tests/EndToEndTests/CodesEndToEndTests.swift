import CountersignClient
import CountersignCore
import Foundation
import Testing

/// TOTP codes, PINs and recovery codes with real broker and agent processes.
@Suite("end to end: TOTP codes, PINs and recovery codes", .serialized)
struct CodesEndToEndTests {
    static let pin = "correct horse"

    /// Enrolls machine A for alice with a PIN (typed on standard input).
    func enrollWithPIN(_ broker: LiveBroker) async throws -> URL {
        let machineA = try temporaryDirectory("agent-A").appendingPathComponent("countersign")
        let token = try await broker.backend.createEnrollmentToken(user: "alice").token
        let enroll = try broker.agent(
            ["enroll", "--token", token, "--name", "laptop-A", "--pin"], configDirectory: machineA,
            stdin: Self.pin + "\n")
        #expect(try await enroll.exitCode() == 0, "\(enroll.text)")
        #expect(enroll.text.contains("TOTP codes are ready"), "\(enroll.text)")
        return machineA
    }

    func currentCode(_ broker: LiveBroker, machine: URL, pin: String = pin) async throws -> (Int32, RunningProcess) {
        let code = try broker.agent(["code", "--json"], configDirectory: machine, stdin: pin + "\n")
        return (try await code.exitCode(), code)
    }

    @Test("a code from `device-agent code` finishes a login on a new machine; the same code again is refused")
    func totpLogin() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await enrollWithPIN(broker)
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: machineA.path).first)
        let keyFile = try String(contentsOf: machineA.appendingPathComponent(file), encoding: .utf8)
        #expect(keyFile.contains("\"protected\"") && !keyFile.contains("PRIVATE KEY"), "sealed under the PIN")
        #expect(!keyFile.contains("totp_secret"))

        let (status, shown) = try await currentCode(broker, machine: machineA)
        #expect(status == 0, "\(shown.text)")
        let code = try await shown.waitFor(#""code" : "(\d{6})""#)

        let machineB = try temporaryDirectory("agent-B")
        let login = try broker.agent(
            ["login", "--code", code, "--json", "--name", "machine-B"], configDirectory: machineB)
        #expect(try await login.exitCode() == 0, "\(login.text)")
        #expect(login.text.contains("Approved with a TOTP code"), "\(login.text)")
        let token = try await login.waitFor(#""token" : "([A-Za-z0-9_.-]+)""#)
        let claims = try await BrokerTokenVerifier.fetch(broker: broker.url).verifyEventToken(
            token, apiKeyID: broker.apiKeyID)
        #expect(claims.approved && claims.method == .totp && claims.sub == "alice")

        let replay = try broker.agent(["login", "--code", code, "--name", "machine-C"], configDirectory: machineB)
        #expect(try await replay.exitCode() == 5, "\(replay.text)")
        #expect(replay.text.contains("used already"), "\(replay.text)")
        let wrong = String(format: "%06d", (Int(code)! + 1) % 1_000_000)
        let guess = try broker.agent(["login", "--code", wrong, "--name", "machine-C"], configDirectory: machineB)
        #expect(try await guess.exitCode() == 5, "\(guess.text)")
        #expect(guess.text.contains("wrong"), "\(guess.text)")
    }

    @Test("a wrong PIN is refused and leaves the key file as it was; the right one still opens it")
    func wrongPIN() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await enrollWithPIN(broker)
        let file = machineA.appendingPathComponent(
            try #require(try FileManager.default.contentsOfDirectory(atPath: machineA.path).first))
        let before = try Data(contentsOf: file)

        let (status, wrong) = try await currentCode(broker, machine: machineA, pin: "not the pin")
        #expect(status != 0)
        #expect(wrong.text.contains("wrong PIN"), "\(wrong.text)")
        let approve = try broker.agent(["approve", "--timeout", "0"], configDirectory: machineA, stdin: "123456\n")
        #expect(try await approve.exitCode() != 0 && approve.text.contains("wrong PIN"), "\(approve.text)")
        #expect(try Data(contentsOf: file) == before, "the key file is untouched")

        let (again, right) = try await currentCode(broker, machine: machineA)
        #expect(again == 0, "\(right.text)")

        // The backend checks a code too, and learns whose device it came from.
        let code = try await right.waitFor(#""code" : "(\d{6})""#)
        let verified = try await broker.backend.verifyCode(user: "alice", code: code)
        let deviceID = try #require(try CredentialStore(directory: machineA).accounts().first?.deviceID)
        #expect(verified.valid && verified.deviceID == deviceID)
        await #expect(throws: CountersignError(status: 422, code: "code_used", message: "")) {
            try await broker.backend.verifyCode(user: "alice", code: code)
        }

        // Removing the PIN needs the PIN; the key then opens without one.
        let remove = try broker.agent(["pin", "--remove"], configDirectory: machineA, stdin: Self.pin + "\n")
        #expect(try await remove.exitCode() == 0, "\(remove.text)")
        let status2 = try broker.agent(["status"], configDirectory: machineA, stdin: "")
        #expect(try await status2.exitCode() == 0, "\(status2.text)")
    }

    @Test("a recovery code enrolls a new machine after the last device is lost, once")
    func recovery() async throws {
        let broker = try await LiveBroker.start()
        defer { broker.stop() }
        let machineA = try await broker.enrollMachine(name: "laptop-A")
        let made = try broker.agent(["recovery-codes"], configDirectory: machineA)
        #expect(try await made.exitCode() == 0, "\(made.text)")
        let code = try await made.waitFor(#"  ([0-9A-Z]{5}(?:-[0-9A-Z]{5}){4})"#)

        // Machine A is lost: the backend removes it.
        let aID = try #require(try CredentialStore(directory: machineA).accounts().first?.deviceID)
        _ = try await broker.backend.revokeDevice(user: "alice", deviceID: aID)

        let machineD = try temporaryDirectory("agent-D").appendingPathComponent("countersign")
        let enroll = try broker.agent(
            ["enroll", "--recovery", "--name", "phone-D"], configDirectory: machineD, stdin: code.lowercased() + "\n")
        #expect(try await enroll.exitCode() == 0, "\(enroll.text)")
        #expect(enroll.text.contains("TOTP codes are ready"), "\(enroll.text)")
        let status = try broker.agent(["status"], configDirectory: machineD)
        #expect(try await status.exitCode() == 0, "\(status.text)")
        let left = try broker.agent(["recovery-codes", "--status"], configDirectory: machineD)
        #expect(try await left.exitCode() == 0 && left.text.contains("9 unused"), "\(left.text)")

        let machineE = try temporaryDirectory("agent-E").appendingPathComponent("countersign")
        let reuse = try broker.agent(
            ["enroll", "--recovery", "--name", "tablet-E"], configDirectory: machineE, stdin: code + "\n")
        #expect(try await reuse.exitCode() != 0, "\(reuse.text)")
        #expect(reuse.text.contains("recovery code is unknown, used"), "\(reuse.text)")
        #expect(try CredentialStore(directory: machineE).accounts().isEmpty, "no key is left behind")
        let changes = try await broker.backend.deviceChanges(user: "alice")
        #expect(changes.first?.actor == ChangeAuthor.recoveryCode)
    }
}
