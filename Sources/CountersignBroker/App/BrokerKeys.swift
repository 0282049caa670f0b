public import CountersignCore
public import CountersignStore
import Crypto
public import Foundation
public import JWTKit
public import Logging
import Synchronization

/// The broker's ES256 signing keys, as one consistent snapshot that
/// ``refresh(from:now:)`` replaces when another process rotated them.
///
/// Rotation never breaks a token: a new key is published in the JWKS at
/// once but signs only ``activationDelay`` later, once every JWKS cache has
/// it (the JWKS is served with `max-age=300`); a key that stopped signing
/// stays published ``retirementDelay`` longer than the longest token it
/// signed lives.
public final class BrokerKeys: Sendable {
    /// How long a new key is published before it signs.
    public static let activationDelay: TimeInterval = 300
    /// How long a replaced key stays published: the longest token lifetime.
    public static let retirementDelay: TimeInterval = 3600

    struct Snapshot: Sendable {
        let jwks: JWKSDocument
        let signingKeyID: String
        let collection: JWTKeyCollection
    }

    private let snapshot: Mutex<Snapshot>

    private init(_ snapshot: Snapshot) {
        self.snapshot = Mutex(snapshot)
    }

    /// The published key set.
    public var jwks: JWKSDocument { snapshot.withLock { $0.jwks } }
    /// The `kid` that signs new tokens.
    public var currentKeyID: String { snapshot.withLock { $0.signingKeyID } }

    /// Loads the keys from the store, creating the first one if there is none.
    public static func load(from store: any CountersignStore, now: Date, logger: Logger? = nil) async throws
        -> BrokerKeys
    {
        var keys = try await store.signingKeys()
        if keys.isEmpty {
            let key = newKey(now: now)
            try await store.insertSigningKey(key)
            logger?.notice("created the broker's first ES256 signing key, \(key.id), kept in the store")
            keys = try await store.signingKeys()
        }
        return BrokerKeys(try await makeSnapshot(keys, now: now))
    }

    /// Re-reads the keys (a rotation by another process) and re-applies
    /// the activation and retirement times at `now`.
    public func refresh(from store: any CountersignStore, now: Date) async throws {
        let keys = try await store.signingKeys()
        guard !keys.isEmpty else { return }
        let fresh = try await Self.makeSnapshot(keys, now: now)
        snapshot.withLock { $0 = fresh }
    }

    /// The key that signs at `now`: the newest one published for at least
    /// ``activationDelay`` (or the first key ever, from its creation).
    public static func signingKey(of keys: [BrokerSigningKey], now: Date) -> BrokerSigningKey {
        keys.last { $0.createdAt + activationDelay <= now } ?? keys[0]
    }

    /// The keys published at `now`: the signing key, newer ones waiting to
    /// sign, and older ones until ``retirementDelay`` after they stopped.
    public static func publishedKeys(of keys: [BrokerSigningKey], now: Date) -> [BrokerSigningKey] {
        let signing = signingKey(of: keys, now: now)
        let signingIndex = keys.lastIndex { $0.id == signing.id }!
        // An older key stopped signing when its successor started.
        return keys.enumerated().filter { index, _ in
            index >= signingIndex || keys[index + 1].createdAt + activationDelay + retirementDelay > now
        }.map(\.element)
    }

    private static func makeSnapshot(_ keys: [BrokerSigningKey], now: Date) async throws -> Snapshot {
        let collection = JWTKeyCollection()
        for key in keys {
            let privateKey = try P256.Signing.PrivateKey(pemRepresentation: key.privateKeyPEM)
            await collection.add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: key.id))
        }
        let published = try publishedKeys(of: keys, now: now).map {
            PublicJWK(
                key: DevicePublicKey(try P256.Signing.PrivateKey(pemRepresentation: $0.privateKeyPEM).publicKey),
                kid: $0.id)
        }
        return Snapshot(
            jwks: JWKSDocument(keys: published), signingKeyID: signingKey(of: keys, now: now).id, collection: collection
        )
    }

    /// A fresh signing key; its id is the RFC 7638 thumbprint of its public key.
    public static func newKey(now: Date) -> BrokerSigningKey {
        let key = P256.Signing.PrivateKey()
        return BrokerSigningKey(
            id: DevicePublicKey(key.publicKey).thumbprint, privateKeyPEM: key.pemRepresentation, createdAt: now)
    }

    /// Signs claims with the current key.
    public func sign(_ claims: some JWTPayload) async throws -> String {
        let (collection, kid) = snapshot.withLock { ($0.collection, $0.signingKeyID) }
        return try await collection.sign(claims, kid: JWKIdentifier(string: kid), header: ["typ": "JWT"])
    }

    /// The claims of a token one of the published keys signed, checked as
    /// `Payload.verify(using:)` checks them.
    public func verify<Payload: JWTPayload>(_ token: String, as _: Payload.Type) async throws -> Payload {
        let collection = snapshot.withLock { $0.collection }
        return try await collection.verify(token, as: Payload.self)
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
