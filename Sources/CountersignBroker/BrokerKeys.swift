public import CountersignCore
public import CountersignStore
import Crypto
public import Foundation
public import JWTKit

/// The broker's ES256 signing keys: the newest signs, all are published in
/// the JWKS so tokens signed before a rotation still verify.
public final class BrokerKeys: Sendable {
    /// The published key set.
    public let jwks: JWKSDocument
    /// The `kid` that signs new tokens.
    public let currentKeyID: String
    private let collection: JWTKeyCollection

    private init(keys: [BrokerSigningKey]) async throws {
        let collection = JWTKeyCollection()
        var published: [PublicJWK] = []
        for key in keys {
            let privateKey = try P256.Signing.PrivateKey(pemRepresentation: key.privateKeyPEM)
            await collection.add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: key.id))
            published.append(PublicJWK(key: DevicePublicKey(privateKey.publicKey), kid: key.id))
        }
        guard let current = keys.last else { throw StoreError(.notFound, "no signing key") }
        self.collection = collection
        self.currentKeyID = current.id
        self.jwks = JWKSDocument(keys: published)
    }

    /// Loads the keys from the store, creating the first one if there is none.
    public static func load(from store: any CountersignStore, now: Date) async throws -> BrokerKeys {
        var keys = try await store.signingKeys()
        if keys.isEmpty {
            try await store.insertSigningKey(newKey(now: now))
            keys = try await store.signingKeys()
        }
        return try await BrokerKeys(keys: keys)
    }

    /// A fresh signing key; its id is the RFC 7638 thumbprint of its public key.
    public static func newKey(now: Date) -> BrokerSigningKey {
        let key = P256.Signing.PrivateKey()
        return BrokerSigningKey(
            id: DevicePublicKey(key.publicKey).thumbprint, privateKeyPEM: key.pemRepresentation, createdAt: now)
    }

    /// Signs claims with the current key.
    public func sign(_ claims: some JWTPayload) async throws -> String {
        try await collection.sign(claims, kid: JWKIdentifier(string: currentKeyID), header: ["typ": "JWT"])
    }
}

/// A public signing key as published in the JWKS.
public struct PublicJWK: Codable, Sendable, Equatable {
    public var kty: String
    public var crv: String
    public var x: String
    public var y: String
    public var kid: String
    public var use: String
    public var alg: String

    init(key: DevicePublicKey, kid: String) {
        self.kty = key.kty
        self.crv = key.crv
        self.x = key.x
        self.y = key.y
        self.kid = kid
        self.use = "sig"
        self.alg = "ES256"
    }
}

/// `/.well-known/jwks.json`.
public struct JWKSDocument: Codable, Sendable, Equatable {
    public var keys: [PublicJWK]
}
