import Foundation

/// libfido2 (Debian's libfido2-1), loaded when a security key is used and
/// not before: the agent builds without its headers and keeps running on a
/// server that does not have it. Only functions libfido2 1.12 exports are
/// looked up, with their C signatures written out from its API
/// (`fido.h`); a library that lacks one is refused as a whole.
///
/// This layer and ``SecurityKeyDevice`` cannot be tested here: no key is
/// plugged in. They stay thin, and everything they return goes through
/// ``SecurityKeyCeremony``, which is tested.
struct FIDO2Library: @unchecked Sendable {
    // @unchecked: C function pointers, set once and only read.

    /// The library's name for the loader; `COUNTERSIGN_LIBFIDO2` names
    /// another (a path, e.g. `/usr/local/lib/libfido2.so.1` or Homebrew's `libfido2.1.dylib`).
    static var defaultName: String {
        ProcessInfo.processInfo.environment["COUNTERSIGN_LIBFIDO2"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "libfido2.so.1"
    }

    /// `fido_opt_t`.
    enum Option: Int32 {
        case omit = 0, no = 1, yes = 2
    }

    /// `COSE_ES256`.
    static let es256: Int32 = -7
    /// `FIDO_OK`.
    static let ok: Int32 = 0

    typealias Handle = OpaquePointer?
    typealias Bytes = UnsafePointer<UInt8>?
    typealias Text = UnsafePointer<CChar>?

    let initialize: @convention(c) (Int32) -> Void
    let errorName: @convention(c) (Int32) -> Text
    let infoNew: @convention(c) (Int) -> Handle
    let infoManifest: @convention(c) (Handle, Int, UnsafeMutablePointer<Int>?) -> Int32
    let infoAt: @convention(c) (Handle, Int) -> Handle
    let infoPath: @convention(c) (Handle) -> Text
    let infoProduct: @convention(c) (Handle) -> Text
    let infoFree: @convention(c) (UnsafeMutablePointer<Handle>?, Int) -> Void
    let deviceNew: @convention(c) () -> Handle
    let deviceOpen: @convention(c) (Handle, Text) -> Int32
    let deviceClose: @convention(c) (Handle) -> Int32
    let deviceFree: @convention(c) (UnsafeMutablePointer<Handle>?) -> Void
    let deviceIsFIDO2: @convention(c) (Handle) -> Bool
    let deviceHasPIN: @convention(c) (Handle) -> Bool
    let deviceHasUV: @convention(c) (Handle) -> Bool
    let deviceSetTimeout: @convention(c) (Handle, Int32) -> Int32
    let makeCredential: @convention(c) (Handle, Handle, Text) -> Int32
    let getAssertion: @convention(c) (Handle, Handle, Text) -> Int32
    let credentialNew: @convention(c) () -> Handle
    let credentialFree: @convention(c) (UnsafeMutablePointer<Handle>?) -> Void
    let credentialSetType: @convention(c) (Handle, Int32) -> Int32
    let credentialSetClientDataHash: @convention(c) (Handle, Bytes, Int) -> Int32
    let credentialSetRP: @convention(c) (Handle, Text, Text) -> Int32
    let credentialSetUser: @convention(c) (Handle, Bytes, Int, Text, Text, Text) -> Int32
    let credentialSetUV: @convention(c) (Handle, Int32) -> Int32
    let credentialID: @convention(c) (Handle) -> Bytes
    let credentialIDLength: @convention(c) (Handle) -> Int
    let credentialAuthData: @convention(c) (Handle) -> Bytes
    let credentialAuthDataLength: @convention(c) (Handle) -> Int
    let assertionNew: @convention(c) () -> Handle
    let assertionFree: @convention(c) (UnsafeMutablePointer<Handle>?) -> Void
    let assertionSetRP: @convention(c) (Handle, Text) -> Int32
    let assertionSetClientDataHash: @convention(c) (Handle, Bytes, Int) -> Int32
    let assertionAllow: @convention(c) (Handle, Bytes, Int) -> Int32
    let assertionSetUV: @convention(c) (Handle, Int32) -> Int32
    let assertionCount: @convention(c) (Handle) -> Int
    let assertionAuthData: @convention(c) (Handle, Int) -> Bytes
    let assertionAuthDataLength: @convention(c) (Handle, Int) -> Int
    let assertionSignature: @convention(c) (Handle, Int) -> Bytes
    let assertionSignatureLength: @convention(c) (Handle, Int) -> Int
    let assertionID: @convention(c) (Handle, Int) -> Bytes
    let assertionIDLength: @convention(c) (Handle, Int) -> Int

    /// Loads `name` and looks up what the agent calls; refuses, saying what
    /// to install, when it cannot.
    static func load(_ name: String = defaultName) throws(AgentFailure) -> FIDO2Library {
        guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "not found"
            throw AgentFailure(
                "a security key needs libfido2, which cannot be loaded here (\(reason)): install libfido2-1 "
                    + "(apt install libfido2-1)")
        }
        func symbol<Function>(_ symbol: String) throws(AgentFailure) -> Function {
            guard let address = dlsym(library, symbol) else {
                throw AgentFailure(
                    "the libfido2 loaded as \(name) has no \(symbol): install libfido2-1, 1.12 or later")
            }
            return unsafeBitCast(address, to: Function.self)
        }
        let loaded = try FIDO2Library(
            initialize: symbol("fido_init"), errorName: symbol("fido_strerr"), infoNew: symbol("fido_dev_info_new"),
            infoManifest: symbol("fido_dev_info_manifest"), infoAt: symbol("fido_dev_info_ptr"),
            infoPath: symbol("fido_dev_info_path"), infoProduct: symbol("fido_dev_info_product_string"),
            infoFree: symbol("fido_dev_info_free"), deviceNew: symbol("fido_dev_new"),
            deviceOpen: symbol("fido_dev_open"), deviceClose: symbol("fido_dev_close"),
            deviceFree: symbol("fido_dev_free"), deviceIsFIDO2: symbol("fido_dev_is_fido2"),
            deviceHasPIN: symbol("fido_dev_has_pin"), deviceHasUV: symbol("fido_dev_has_uv"),
            deviceSetTimeout: symbol("fido_dev_set_timeout"), makeCredential: symbol("fido_dev_make_cred"),
            getAssertion: symbol("fido_dev_get_assert"), credentialNew: symbol("fido_cred_new"),
            credentialFree: symbol("fido_cred_free"), credentialSetType: symbol("fido_cred_set_type"),
            credentialSetClientDataHash: symbol("fido_cred_set_clientdata_hash"),
            credentialSetRP: symbol("fido_cred_set_rp"), credentialSetUser: symbol("fido_cred_set_user"),
            credentialSetUV: symbol("fido_cred_set_uv"), credentialID: symbol("fido_cred_id_ptr"),
            credentialIDLength: symbol("fido_cred_id_len"), credentialAuthData: symbol("fido_cred_authdata_raw_ptr"),
            credentialAuthDataLength: symbol("fido_cred_authdata_raw_len"), assertionNew: symbol("fido_assert_new"),
            assertionFree: symbol("fido_assert_free"), assertionSetRP: symbol("fido_assert_set_rp"),
            assertionSetClientDataHash: symbol("fido_assert_set_clientdata_hash"),
            assertionAllow: symbol("fido_assert_allow_cred"), assertionSetUV: symbol("fido_assert_set_uv"),
            assertionCount: symbol("fido_assert_count"), assertionAuthData: symbol("fido_assert_authdata_ptr"),
            assertionAuthDataLength: symbol("fido_assert_authdata_len"),
            assertionSignature: symbol("fido_assert_sig_ptr"), assertionSignatureLength: symbol("fido_assert_sig_len"),
            assertionID: symbol("fido_assert_id_ptr"), assertionIDLength: symbol("fido_assert_id_len"))
        loaded.initialize(0)
        return loaded
    }

    /// libfido2's name for an error code, e.g. `FIDO_ERR_PIN_INVALID`.
    func name(of code: Int32) -> String {
        errorName(code).map { String(cString: $0) } ?? "error \(code)"
    }
}
