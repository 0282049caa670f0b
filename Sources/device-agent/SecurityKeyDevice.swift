import Foundation
import Synchronization

/// The first FIDO2 security key plugged in, opened through libfido2: makes
/// a credential and gets assertions, returning libfido2's outputs as they
/// are (``SecurityKeyCeremony`` turns them into what the broker takes).
///
/// Untested here (no key is plugged in; see ``FIDO2Library``). Each call
/// blocks until the key is touched, so it runs on a thread of its own, not
/// on the concurrency pool; the handle is used by one call at a time.
final class SecurityKeyDevice: Sendable {
    let library: FIDO2Library
    /// The key's product name, as it reports it.
    let product: String
    /// It verifies its owner by itself (a fingerprint reader), without a PIN.
    let verifiesBuiltIn: Bool
    /// A PIN is set on it.
    let hasPIN: Bool
    private let handle: Mutex<Handle>

    private struct Handle: ~Copyable {
        var device: OpaquePointer?
    }

    /// Opens the first FIDO2 device libfido2 finds.
    init(library: FIDO2Library) throws(AgentFailure) {
        self.library = library
        let (path, product) = try Self.first(library)
        self.product = product
        var device = library.deviceNew()
        let opened = library.deviceOpen(device, path)
        guard opened == FIDO2Library.ok else {
            library.deviceFree(&device)
            throw AgentFailure(
                "the security key \(shown(product)) cannot be opened (\(library.name(of: opened))); "
                    + "is its device file readable by you? (Debian's udev rules give it to the logged-in user)")
        }
        guard library.deviceIsFIDO2(device) else {
            _ = library.deviceClose(device)
            library.deviceFree(&device)
            throw AgentFailure(
                "\(shown(product)) is a U2F-only key: it cannot verify you (PIN or fingerprint), which a passkey "
                    + "needs")
        }
        verifiesBuiltIn = library.deviceHasUV(device)
        hasPIN = library.deviceHasPIN(device)
        handle = Mutex(Handle(device: device))
    }

    /// The path and product name of the first FIDO2 device plugged in.
    private static func first(_ library: FIDO2Library) throws(AgentFailure) -> (path: String, product: String) {
        var list = library.infoNew(16)
        defer { library.infoFree(&list, 16) }
        var found = 0
        let listed = library.infoManifest(list, 16, &found)
        guard listed == FIDO2Library.ok else {
            throw AgentFailure("security keys cannot be listed (\(library.name(of: listed)))")
        }
        guard found > 0, let info = library.infoAt(list, 0), let path = library.infoPath(info) else {
            throw AgentFailure("no FIDO2 security key is plugged in: plug in yours and run this again")
        }
        return (String(cString: path), library.infoProduct(info).map { String(cString: $0) } ?? "security key")
    }

    deinit {
        handle.withLock { handle in
            _ = library.deviceClose(handle.device)
            library.deviceFree(&handle.device)
        }
    }

    /// `fido_dev_make_cred`: an ES256 credential with the user verified.
    /// Returns its id and the raw authenticator data.
    func makeCredential(
        clientDataHash: Data, rpID: String, userID: Data, userName: String, displayName: String, pin: String?,
        timeout: Duration
    ) async throws -> (id: Data, authenticatorData: Data) {
        try await run(timeout: timeout) { [library] device in
            var credential = library.credentialNew()
            defer { library.credentialFree(&credential) }
            try Self.check(library.credentialSetType(credential, FIDO2Library.es256), library)
            try Self.check(
                clientDataHash.withBytes { library.credentialSetClientDataHash(credential, $0, $1) }, library)
            try Self.check(library.credentialSetRP(credential, rpID, "Countersign"), library)
            try Self.check(
                userID.withBytes { library.credentialSetUser(credential, $0, $1, userName, displayName, nil) }, library)
            try Self.check(library.credentialSetUV(credential, FIDO2Library.Option.yes.rawValue), library)
            try Self.check(library.makeCredential(device, credential, pin), library)
            return (
                Data.copying(library.credentialID(credential), library.credentialIDLength(credential)),
                Data.copying(library.credentialAuthData(credential), library.credentialAuthDataLength(credential))
            )
        }
    }

    /// `fido_dev_get_assert` for the one credential `credentialID`, with the
    /// user verified. Returns the id the key answered with (empty if it left
    /// it out), the authenticator data as libfido2 gives it (CBOR-wrapped),
    /// and the DER signature.
    func getAssertion(
        clientDataHash: Data, rpID: String, credentialID: Data, pin: String?, timeout: Duration
    ) async throws -> (id: Data, wrappedAuthenticatorData: Data, signature: Data) {
        try await run(timeout: timeout) { [library] device in
            var assertion = library.assertionNew()
            defer { library.assertionFree(&assertion) }
            try Self.check(library.assertionSetRP(assertion, rpID), library)
            try Self.check(clientDataHash.withBytes { library.assertionSetClientDataHash(assertion, $0, $1) }, library)
            try Self.check(credentialID.withBytes { library.assertionAllow(assertion, $0, $1) }, library)
            try Self.check(library.assertionSetUV(assertion, FIDO2Library.Option.yes.rawValue), library)
            try Self.check(library.getAssertion(device, assertion, pin), library)
            guard library.assertionCount(assertion) == 1 else {
                throw AgentFailure("the security key returned no single assertion")
            }
            return (
                Data.copying(library.assertionID(assertion, 0), library.assertionIDLength(assertion, 0)),
                Data.copying(library.assertionAuthData(assertion, 0), library.assertionAuthDataLength(assertion, 0)),
                Data.copying(library.assertionSignature(assertion, 0), library.assertionSignatureLength(assertion, 0))
            )
        }
    }

    /// Runs `work` on the open device, on a thread of its own.
    private func run<Result: Sendable>(
        timeout: Duration, _ work: @escaping @Sendable (OpaquePointer?) throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { [self] in
                continuation.resume(
                    with: Swift.Result {
                        try handle.withLock { handle in
                            let milliseconds = max(1, Int32(clamping: timeout.components.seconds * 1000))
                            _ = library.deviceSetTimeout(handle.device, milliseconds)
                            return try work(handle.device)
                        }
                    })
            }
        }
    }

    /// Throws what a libfido2 result other than `FIDO_OK` means to the person.
    private static func check(_ code: Int32, _ library: FIDO2Library) throws(AgentFailure) {
        guard code != FIDO2Library.ok else { return }
        throw AgentFailure(explain(code, name: library.name(of: code)))
    }

    /// libfido2's error codes (`fido/err.h`, the CTAP2 status codes) in
    /// words a person can act on; `name` is libfido2's for the rest.
    static func explain(_ code: Int32, name: String) -> String {
        switch code {
        case 0x31: "wrong PIN for the security key (it counts wrong tries, and locks after a few)"
        case 0x32: "the security key's PIN is blocked: only a reset of the key (which erases it) unblocks it"
        case 0x34: "the security key refuses PINs for now: unplug it, plug it back in, and try again"
        case 0x35, 0x36: "the security key needs a PIN set on it first (e.g. fido2-token -S, from fido2-tools)"
        case 0x2E: "this security key does not hold this device's passkey: plug in the one it was added with"
        case 0x2F, 0x3A: "the security key was not touched in time"
        case 0x27, 0x2D, 0x30: "the security key refused (cancelled on the key)"
        case 0x3C: "the security key's fingerprint check is blocked: use its PIN instead (--pin-prompt)"
        case 0x3F: "the security key did not recognise the fingerprint"
        case 0x19: "this security key already holds a passkey for this device"
        default: "the security key answered \(name)"
        }
    }
}

extension Data {
    /// `count` bytes copied from a C buffer; empty for a null pointer.
    fileprivate static func copying(_ pointer: UnsafePointer<UInt8>?, _ count: Int) -> Data {
        guard let pointer, count > 0 else { return Data() }
        return Data(bytes: pointer, count: count)
    }

    /// Calls `body` with the bytes' address and count.
    fileprivate func withBytes<Result>(_ body: (UnsafePointer<UInt8>?, Int) -> Result) -> Result {
        withUnsafeBytes { body($0.bindMemory(to: UInt8.self).baseAddress, $0.count) }
    }
}
