import ArgumentParser
import CountersignClient
import CountersignCore
import Foundation
import Synchronization

enum PAMVerdict: Equatable {
    case allow(String)
    case deny(String)
    /// Denied, and no other try should follow in this conversation: the
    /// module answers PAM_MAXTRIES, which ends sshd's keyboard-interactive
    /// for the connection.
    case refuse(String)
    case ignore(String)

    var line: String {
        switch self {
        case .allow(let id): "allow \(id)"
        case .deny(let why): "deny \(why)"
        case .refuse(let why): "refuse \(why)"
        case .ignore(let why): "ignore \(why)"
        }
    }
}

/// One login: one request, at most one code.
struct PAMLogin {
    let settings: PAMSettings
    let unixUser: String
    let service: String
    let rhost: String
    /// PAM's terminal: sshd names it `ssh` while it authenticates.
    var tty = ""
    let command: String
    let module: PAMModuleChannel
    let log: AuthLog

    var host: String { ProcessInfo.processInfo.hostName }

    /// Whether sudo asks: by its PAM service, or because the module sends
    /// a command line, which it does only when the program that loaded it
    /// runs sudo's file (sudoers' `pam_service` can name another service).
    var isSudo: Bool { service == "sudo" || service == "sudo-i" || !command.isEmpty }

    /// What the approver reads.
    var details: String {
        let text =
            isSudo
            ? "sudo as \(unixUser) on \(host): \(command.isEmpty ? "(command unknown)" : command)"
            : "\(service.isEmpty ? "login" : service) as \(unixUser) on \(host)"
                + (rhost.isEmpty ? "" : " from \(rhost)")
        return String(text.prefix(1000))
    }

    func run() async -> PAMVerdict {
        let user = settings.userID(for: unixUser)
        let backend = CountersignBackend(
            broker: settings.broker, apiKeyID: settings.apiKeyID, apiSecretKey: settings.apiSecret)
        let requester = CountersignClient(broker: settings.broker, apiKeyID: settings.apiKeyID)
        // For the log: the user name comes from the client (sshd passes on
        // what it was offered), so nothing in it may start a line of its own.
        let who = DisplayText.escaped(
            "\(service) login of \(unixUser) (\(user))" + (rhost.isEmpty ? "" : " from \(rhost)"))
        let ticket: EventTicket
        // The SSH client is nobody the server vouches for: its requests count
        // against the requester limits of its address and the user's, and a
        // "this wasn't me" stops them, as for any requester.
        let client = Self.clientAddress(rhost)
        if client == nil, !rhost.isEmpty {
            log.write(LOG_WARNING, "\(who): the remote host has no address; no client limits")
        }
        let requesterName = String("\(host) (\(service.isEmpty ? "pam" : service))".prefix(128))
        do {
            ticket = try await backend.requestApproval(
                user: user, event: EventName.login, details: details, numberMatching: true,
                requesterName: requesterName, ip: client,
                limitAsRequester: client != nil && settings.clientLimits == .on)
        } catch let error as CountersignError where error.code == "no_trusted_device" {
            switch settings.unenrolled {
            case .deny:
                log.write(LOG_NOTICE, "\(who) denied: the user has no trusted device")
                module.error("Countersign: \(unixUser) has no trusted device.")
                return .deny("not enrolled")
            case .skip:
                log.write(LOG_NOTICE, "\(who) left to the next module: the user has no trusted device")
                return .ignore("not enrolled")
            }
        } catch let error as CountersignError where error.status == 429 {
            // Too many requests lately, or the user reported one as not
            // theirs: no request, whatever the fail mode; a code from the
            // user's device still lets the user in.
            log.write(LOG_NOTICE, "\(who): no request: \(error.code): \(error.message)")
            // A login the code lets in is recorded as an approved LOGIN.
            let record = CodeRecord(details: details, requesterName: requesterName, ip: client)
            return await codeInstead(
                of: "no request (\(error.code))", user: user, record: record, backend: backend, who: who,
                prompt: "Countersign: \(error.description). Type a code from device-agent code "
                    + "(or press Enter to give up): ")
        } catch let error as CountersignError where error.isTransient {
            // Safe mode lets in only when no broker answered at all: an
            // answer (a broker's 503 at its connection limit, a proxy's 502)
            // is something anyone who can load the broker can bring about.
            switch (settings.failMode, error.status) {
            case (.safe, 0):
                log.write(LOG_WARNING, "\(who) ALLOWED WITHOUT APPROVAL: \(error.message) (fail_mode safe)")
                // Over sshd, shown when the session starts.
                module.error(
                    "Countersign: the broker cannot be reached; this login was let in without an approval "
                        + "(fail_mode safe), and logged.")
                return .allow("-")
            case (.safe, _):
                log.write(
                    LOG_ERR,
                    "\(who) denied: the broker answered \(error.status) (fail_mode safe lets in only when none answers)"
                )
                module.error("Countersign: the broker is unavailable; login refused.")
                return .deny("broker unavailable")
            case (.secure, _):
                log.write(LOG_ERR, "\(who) denied: \(error.message) (fail_mode secure)")
                module.error("Countersign: the broker cannot be reached; login refused.")
                return .deny("broker unreachable")
            }
        } catch {
            log.write(LOG_ERR, "\(who) denied: \(error)")
            module.error("Countersign: the request could not be made; login refused.")
            return .deny("request refused")
        }
        let id = ticket.event.ID
        log.write(LOG_INFO, "\(who): request \(id) sent")
        let left = max(0, Int(ticket.event.expiresAt.timeIntervalSinceNow.rounded()))
        let number = ticket.matchNumber.map { "number \($0), " } ?? ""
        let first = await module.ask(
            "Countersign: approve the request on your trusted device (\(number)within \(left) s), then press Enter; "
                + "or type a code from device-agent code: ")
        guard case .answer(let answer) = first else {
            return await give(up: ticket, requester, who: who, reason: "the login was abandoned at the prompt")
        }
        if !answer.trimmingCharacters(in: .whitespaces).isEmpty {
            return await code(answer, for: ticket, requester, who: who)
        }
        let outcome = await waitForOutcome(ticket, requester)
        switch outcome {
        case .approved(let event):
            log.write(LOG_NOTICE, "\(who): request \(id) approved by device \(event.decidedBy ?? "?")")
            return .allow(id)
        case .rejected(let reported):
            log.write(LOG_NOTICE, "\(who): request \(id) \(reported ? "reported as not the user's" : "rejected")")
            return await refused(
                reported
                    ? "Countersign: reported on your device as not you; login refused."
                    : "Countersign: refused on your device; login refused.", why: "rejected")
        case .abandoned:
            return await give(up: ticket, requester, who: who, reason: "the login went away while waiting")
        case .failed(let why):
            log.write(LOG_ERR, "\(who): request \(id) denied: \(why)")
            module.error("Countersign: no answer could be read; login refused.")
            return .deny("broker failed")
        case .expired:
            // The code goes to the request itself, which the broker then
            // records as approved by TOTP: a login a code let in never
            // leaves its event reading "expired".
            log.write(LOG_NOTICE, "\(who): request \(id) expired unanswered")
            let late = await module.ask(
                "Countersign: no answer came in time. Type a code from device-agent code "
                    + "(or press Enter to give up): ")
            guard case .answer(let typed) = late, !typed.trimmingCharacters(in: .whitespaces).isEmpty else {
                log.write(LOG_NOTICE, "\(who): denied: request \(id) (expired)")
                module.error("Countersign: login refused.")
                return .deny("request \(id) (expired)")
            }
            return await code(typed, for: ticket, requester, who: who)
        }
    }

    /// The client's address from PAM's remote host, as the broker takes
    /// it: sshd gives an IPv6 link-local address with its zone
    /// (`fe80::1%eth0`), and with `UseDNS yes` a host name (which sshd has
    /// checked maps back to the client's address).
    static func clientAddress(_ rhost: String) -> String? {
        guard !rhost.isEmpty else { return nil }
        let bare = String(rhost.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)[0])
        if let address = try? DisplayText.checkAddress(bare).get() { return address }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(rhost, nil, &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard
            getnameinfo(
                first.pointee.ai_addr, first.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
                == 0
        else { return nil }
        let numeric = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return try? DisplayText.checkAddress(String(numeric.split(separator: "%", maxSplits: 1)[0])).get()
    }

    /// A code from `device-agent code`, checked by the backend, when no
    /// request could be made; the broker records the login it lets in.
    private func codeInstead(
        of what: String, user: String, record: CodeRecord, backend: CountersignBackend, who: String,
        prompt: String
    ) async -> PAMVerdict {
        let answer = await module.ask(prompt)
        guard case .answer(let code) = answer, !code.trimmingCharacters(in: .whitespaces).isEmpty else {
            log.write(LOG_NOTICE, "\(who): denied: \(what)")
            module.error("Countersign: login refused.")
            return .deny(what)
        }
        do {
            let match = try await backend.verifyCode(
                user: user, code: code.trimmingCharacters(in: .whitespaces), record: record)
            let id = match.event?.ID ?? "-"
            log.write(
                LOG_NOTICE, "\(who): allowed by a code from device \(match.deviceID) after \(what), recorded as \(id)")
            return .allow(id)
        } catch {
            log.write(LOG_NOTICE, "\(who): code refused after \(what): \(error)")
            module.error("Countersign: that code is not valid.")
            return .deny("code refused")
        }
    }

    private func code(_ code: String, for ticket: EventTicket, _ requester: CountersignClient, who: String) async
        -> PAMVerdict
    {
        let id = ticket.event.ID
        do {
            let event = try await requester.submitCode(code.trimmingCharacters(in: .whitespaces), for: ticket)
            if event.status == .approved {
                log.write(LOG_NOTICE, "\(who): request \(id) approved by a code")
                return .allow(id)
            }
        } catch {
            log.write(LOG_NOTICE, "\(who): code refused for \(id): \(error)")
        }
        module.error("Countersign: that code is not valid.")
        _ = try? await requester.withdraw(ticket)
        return .deny("code refused")
    }

    /// A refusal on the device, told to the person. sshd keeps a message
    /// of a failed keyboard-interactive round to itself (it shows such
    /// messages only with the next prompt, or after a login that
    /// succeeds), so over ssh the message comes with a last prompt. Then,
    /// unless the configuration says `after_refusal = retry`, no fresh
    /// request may follow in the same connection.
    private func refused(_ message: String, why: String) async -> PAMVerdict {
        module.error(message)
        if tty == "ssh" {
            _ = await module.ask("Press Enter to close: ")
        }
        return settings.afterRefusal == .end ? .refuse(why) : .deny(why)
    }

    private func give(up ticket: EventTicket, _ requester: CountersignClient, who: String, reason: String) async
        -> PAMVerdict
    {
        _ = try? await requester.withdraw(ticket)
        log.write(LOG_NOTICE, "\(who): request \(ticket.event.ID) withdrawn: \(reason)")
        return .deny("abandoned")
    }

    enum Outcome {
        case approved(EventDocument)
        /// Refused on the device; `reported` when as "this wasn't me".
        case rejected(reported: Bool)
        case expired
        case abandoned
        case failed(String)
    }

    /// The event's outcome, or `abandoned` as soon as the module goes away.
    private func waitForOutcome(_ ticket: EventTicket, _ requester: CountersignClient) async -> Outcome {
        await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                do {
                    let event = try await requester.awaitOutcome(of: ticket)
                    switch event.status {
                    case .approved: return .approved(event)
                    case .rejected:
                        return .rejected(
                            reported: event.statusReason == .fraudReported || event.statusReason == .userProtected)
                    case .expired, .pending: return .expired
                    }
                } catch {
                    return .failed("\(error)")
                }
            }
            group.addTask {
                await module.ended()
                return .abandoned
            }
            let first = await group.next() ?? .failed("no outcome")
            group.cancelAll()
            return first
        }
    }
}
