import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What pam_countersign.so runs for each login: it asks the user's trusted
/// devices through the broker, and tells the module what to show, what to
/// ask, and the verdict, one line at a time (deploy/pam/pam_countersign.c
/// has the protocol). Not for people to run.
struct PAMHelper: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pam-helper",
        abstract: """
            The helper the pam_countersign module runs for each login (see \
            /usr/share/doc/countersign-agent/pam.md.gz, or docs/pam.md in the source).
            """,
        shouldDisplay: false)

    @Option(help: "The helper's configuration file.")
    var config = "/etc/countersign/pam.conf"
    @Option(help: "The Unix user logging in.")
    var user: String
    @Option(help: "The PAM service (sshd, sudo, …).")
    var service = ""
    @Option(help: "The remote host, if any.")
    var rhost = ""
    @Option(help: "The terminal, if any.")
    var tty = ""
    @Option(help: "The command line of the process that loaded the module (sudo's).")
    var command = ""

    func run() async throws {
        let module = PAMModuleChannel()
        let log = AuthLog()
        let verdict: PAMVerdict
        do {
            let settings = try PAMSettings.load(path: config)
            verdict = await PAMLogin(
                settings: settings, unixUser: user, service: service, rhost: rhost, tty: tty, command: command,
                module: module, log: log
            ).run()
        } catch {
            log.write(LOG_ERR, "\(service) login of \(user) denied: \(error)")
            // Run by hand (the module sends its standard error nowhere),
            // the reason is printed: where no syslog daemon listens (a
            // container without /dev/log) the log line is lost.
            FileHandle.standardError.write(Data("device-agent pam-helper: \(error)\n".utf8))
            // Why, in the log only: the user learns that it is not them.
            module.error(
                "Countersign: this machine's login configuration is unusable, so logins are refused; "
                    + "an administrator can see why in the authpriv log, or by running "
                    + "device-agent pam-helper --user NAME by hand.")
            verdict = .deny("the Countersign PAM configuration is unusable")
        }
        module.send(verdict.line)
    }
}
