import ArgumentParser
import CountersignClient
import CountersignCore
import CountersignOTP
import Foundation

/// Fetches a newly trusted device's TOTP secret and keeps it in the key
/// file. Enrollment stands without it; the failure is only reported.
struct TOTPSetup {
    let store: CredentialStore

    @discardableResult
    func run(_ credential: DeviceCredential) async -> DeviceCredential? {
        var credential = credential
        do {
            credential.totpSecret = try await CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
                .createTOTPSecret(credential).secret
            try store.save(credential)
            print("TOTP codes are ready: `device-agent code` shows one when no trusted device can answer.")
            return credential
        } catch let error as CountersignError where error.code == "totp_unavailable" {
            print("This broker offers no TOTP codes.")
        } catch {
            print("TOTP codes are not set up (\(error)); `device-agent code` tries again.")
        }
        return nil
    }
}

extension DeviceAgent {
    struct Code: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show this trusted device's current TOTP code, for a machine that cannot get an approval.",
            discussion: """
                Type the code on the machine that asks to log in (`device-agent login --code N`) or \
                into the app. Each code works once; the broker also takes the previous one.

                Exit codes: 0 shown; 1 error (no TOTP secret, wrong PIN).
                """)

        @OptionGroup var account: AccountOptions

        @Flag(help: "Print the code and seconds left as JSON.")
        var json = false

        func run() async throws {
            var credential = try account.enrolledCredential()
            if credential.totpSecret == nil {
                guard let ready = await TOTPSetup(store: account.credentials).run(credential) else {
                    throw AgentFailure("this device has no TOTP secret")
                }
                credential = ready
            }
            let secret = credential.totpSecret!
            let now = Date()
            let code = secret.code(at: TOTPParameters.step(at: now))
            let left = TOTPParameters.secondsLeft(at: now)
            if json {
                struct Output: Encodable {
                    let code: String
                    let secondsLeft: Int
                    enum CodingKeys: String, CodingKey {
                        case code
                        case secondsLeft = "seconds_left"
                    }
                }
                let data = try JSONEncoder.pretty.encode(Output(code: code, secondsLeft: left))
                print(String(decoding: data, as: UTF8.self))
            } else {
                print(code)
                FileHandle.standardError.write(Data("Valid for \(left) s more (and the step after).\n".utf8))
            }
        }
    }

    struct RecoveryCodes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recovery-codes",
            abstract: "Make a new set of recovery codes for the user, replacing any earlier set.",
            discussion: """
                A recovery code enrolls a new device (`device-agent enroll --recovery`) when every \
                trusted device is lost. Each works once. They are shown only now: keep them somewhere \
                safe, away from this machine. `--status` shows how many are left. Replacing a set that \
                still has unused codes asks first on a terminal; elsewhere give --yes.
                """)

        @OptionGroup var account: AccountOptions

        @Flag(help: "Only say how many unused codes are left.")
        var status = false

        @Flag(help: "Replace an earlier set without asking.")
        var yes = false

        func run() async throws {
            let credential = try account.enrolledCredential()
            let client = CountersignClient(for: credential, userAgent: DeviceAgent.userAgent)
            if status {
                print("\(try await client.recoveryCodesLeft(credential)) unused recovery codes.")
                return
            }
            if !yes {
                let left = try await client.recoveryCodesLeft(credential)
                if left > 0 {
                    guard Console.isInteractive else {
                        throw usageFailure(
                            "\(left) recovery codes are still unused; give --yes to replace them with a new set")
                    }
                    guard Prompt.confirm("\(left) recovery codes are still unused. Replace them with a new set?")
                    else {
                        print("The recovery codes are unchanged.")
                        return
                    }
                }
            }
            let codes = try await client.createRecoveryCodes(credential)
            print("Recovery codes for \(credential.clientUserID); each works once, and earlier ones no longer do:")
            for code in codes { print("  \(code)") }
        }
    }

    struct PIN: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pin",
            abstract: "Set, change or remove the PIN that protects this device's key.")

        @OptionGroup var account: AccountOptions

        @Flag(help: "Remove the PIN: the key file is then protected by its permissions only.")
        var remove = false

        func run() async throws {
            var credential = try account.enrolledCredential()
            try credential.setPIN(remove ? nil : try Prompt.newPIN())
            try account.credentials.save(credential)
            print(remove ? "The key is no longer protected by a PIN." : "The key is protected by the new PIN.")
        }
    }
}
