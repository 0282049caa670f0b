public import CountersignCore
public import Crypto
import Foundation

/// A device's key for one account (broker, app, user), as the agent keeps it.
public struct DeviceCredential: Sendable {
    /// The broker's base URL.
    public var broker: String
    /// The app's API key id.
    public var apiKeyID: String
    /// The app's id for the user.
    public var clientUserID: String
    /// The device's P-256 private key; it never leaves the device.
    public var privateKey: P256.Signing.PrivateKey
    /// The name the device enrolled with.
    public var name: String

    public init(
        broker: String, apiKeyID: String, clientUserID: String, privateKey: P256.Signing.PrivateKey, name: String
    ) {
        self.broker = broker
        self.apiKeyID = apiKeyID
        self.clientUserID = clientUserID
        self.privateKey = privateKey
        self.name = name
    }

    /// The device id: the thumbprint of the public key.
    public var deviceID: String { publicKey.thumbprint }
    /// The public key as a JWK.
    public var publicKey: DevicePublicKey { DevicePublicKey(privateKey.publicKey) }
}
