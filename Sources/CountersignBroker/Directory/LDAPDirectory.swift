import CLDAP
import CountersignCore
import Foundation
import NIOPosix

/// Reads a directory's people over LDAP with Debian's OpenLDAP client
/// library (libldap, through the small C shim in `CLDAP`): a maintained
/// implementation of the protocol, its TLS, paging and the quirks of
/// Active Directory, which a hand-written client would have to learn
/// again. Its calls block, so they run on NIO's blocking-I/O pool, never
/// on the cooperative threads (two on a two-core machine).
struct LDAPDirectory: Sendable {
    let settings: DirectorySettings
    let password: String

    /// Why a read failed: the step, libldap's result code and text, and
    /// what the server said.
    struct Failure: Error, CustomStringConvertible {
        let step: String
        let code: Int32
        let detail: String

        var description: String { step.isEmpty ? "directory: \(detail)" : "directory \(step) failed: \(detail)" }
    }

    /// Every entry below the base DN that the filter finds, every page.
    func entries() async throws -> [DirectoryEntry] {
        let settings = settings
        let password = password
        return try await NIOThreadPool.singleton.runIfActive {
            try Self.read(settings, password: password)
        }
    }

    /// libldap's one-time set-up (ldap.conf, GnuTLS), which its manual
    /// asks for on one thread before others open handles.
    private static let initialized: Bool = {
        // A closed TLS connection to a server that went away writes to a
        // dead socket: the process must not die of SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        return cldap_global_init() == 0
    }()

    private static func read(_ settings: DirectorySettings, password: String) throws -> [DirectoryEntry] {
        _ = initialized
        var handle: OpaquePointer?
        try check(cldap_open(settings.uris.joined(separator: " "), &handle), "open", nil)
        guard let ld = handle else { throw Failure(step: "open", code: -1, detail: "no handle") }
        defer { cldap_unbind(ld) }
        try check(
            cldap_set_tls(ld, settings.caFile, CLDAP_TLS_DEMAND),
            settings.caFile.map { "TLS set-up with ca-file \($0)" } ?? "TLS set-up", ld)
        let timeout = Int32(settings.timeout * 1000)
        try check(cldap_set_timeouts(ld, timeout, timeout), "set-up", ld)
        try check(cldap_connect(ld), "connection to \(settings.uris.joined(separator: " "))", ld)
        if settings.startTLS { try check(cldap_start_tls(ld), "StartTLS", ld) }
        try check(cldap_simple_bind(ld, settings.bindDN, password), "bind as \(settings.bindDN)", ld)
        let attributes = settings.attributes
        var entries: [DirectoryEntry] = []
        var cookie: UnsafeMutablePointer<berval>?
        defer { cldap_cookie_free(cookie) }
        repeat {
            var result: OpaquePointer?
            let code = cldap_search_page(
                ld, settings.baseDN, CLDAP_SCOPE_SUBTREE, settings.filter, attributes.joined(separator: " "),
                Int32(settings.pageSize), &cookie, &result)
            defer { cldap_msgfree(result) }
            try check(code, "search of \(settings.baseDN)", ld)
            var entry = cldap_first_entry(ld, result)
            while let current = entry {
                entries.append(Self.entry(current, in: ld, attributes: attributes))
                entry = cldap_next_entry(ld, current)
            }
        } while cookie != nil
        return entries
    }

    private static func entry(_ entry: OpaquePointer, in ld: OpaquePointer, attributes: [String]) -> DirectoryEntry {
        var dn = ""
        if let text = cldap_get_dn(ld, entry) {
            dn = String(cString: text)
            cldap_memfree(text)
        }
        var values: [String: [String]] = [:]
        for name in attributes {
            guard let list = cldap_get_values(ld, entry, name) else { continue }
            defer { cldap_values_free(list) }
            var texts: [String] = []
            var index = 0
            while let value = list[index] {
                let bytes = UnsafeRawBufferPointer(start: value.pointee.bv_val, count: Int(value.pointee.bv_len))
                texts.append(String(decoding: bytes, as: UTF8.self))
                index += 1
            }
            values[name] = texts
        }
        return DirectoryEntry(dn: dn, attributes: values)
    }

    private static func check(_ code: Int32, _ step: String, _ ld: OpaquePointer?) throws {
        guard code != 0 else { return }
        var detail = String(cString: cldap_err2string(code))
        if let ld, let message = cldap_diagnostic_message(ld) {
            let text = String(cString: message)
            cldap_memfree(message)
            // The shim's account of a failed handshake says more than
            // "Can't contact LDAP server", and libldap 2.5's own code
            // for it says nothing.
            detail =
                text.hasPrefix("TLS handshake failed")
                ? text.replacingOccurrences(of: " [libldap: (unknown error code)]", with: "") : detail + ": " + text
        }
        throw Failure(step: step, code: code, detail: detail)
    }
}
