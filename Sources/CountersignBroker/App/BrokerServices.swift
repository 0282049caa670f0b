import CountersignCore
import CountersignPostgres
import CountersignSQLite
import CountersignStore
import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import ServiceLifecycle

/// Re-reads the signing keys every 30 s, and at once when another instance
/// on a shared store says they changed, so that a rotation by
/// `device-broker keys rotate` reaches every running instance.
struct KeyRefresher: Service {
    let environment: BrokerEnvironment
    let logger: Logger

    func run() async throws {
        // Cancelled (another service failed, e.g. the port was taken) as
        // well as shut down: a wait returns at once then, and the loop
        // would spin.
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let rotated = environment.hub.subscribe([WakeKey.signingKeys])
            await rotated.wait(timeout: .seconds(30))
            guard !Task.isShuttingDownGracefully, !Task.isCancelled else { return }
            do {
                let before = environment.keys.currentKeyID
                try await environment.keys.refresh(from: environment.store, now: environment.now())
                if environment.keys.currentKeyID != before {
                    logger.notice("now signing with key \(environment.keys.currentKeyID)")
                }
            } catch {
                logger.warning("could not re-read the signing keys", metadata: ["error": "\(error)"])
            }
        }
    }
}

/// TLS 1.2+ with the operator's certificate chain and key.
func serverTLS(_ files: (certificateFile: String, keyFile: String)) throws -> TLSConfiguration {
    do {
        let chain = try NIOSSLCertificate.fromPEMFile(files.certificateFile).map {
            NIOSSLCertificateSource.certificate($0)
        }
        let key = try NIOSSLPrivateKey(file: files.keyFile, format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    } catch {
        throw BrokerSetupError(
            "cannot use the TLS certificate \(files.certificateFile) and key \(files.keyFile): \(error)")
    }
}

/// Closes the store once everything else has stopped, and says how many
/// held long-polls the shutdown answered early (their clients poll again,
/// through another instance or after the restart).
struct StoreCloser: Service {
    let close: @Sendable () async -> Void
    let hub: WakeHub
    let logger: Logger

    func run() async throws {
        do {
            try await gracefulShutdown()
            logger.notice("stopped serving: \(hub.answeredAtShutdown) held long-polls answered at once")
        } catch {
            // Cancelled: the broker did not start; nothing was served.
        }
        await close()
    }
}

/// Wakes this instance's long-polls on changes committed through any
/// instance sharing the store.
struct WakeRelay: Service {
    let feed: any WakeFeed
    let hub: WakeHub
    let logger: Logger

    func run() async throws {
        let hub = hub
        try await cancelWhenGracefulShutdown {
            try await feed.followChanges(wake: { hub.notify($0) }, resync: { hub.notifyAll() })
        }
    }
}

/// Deletes what has expired, once a minute, until shutdown.
struct GarbageCollector: Service {
    let environment: BrokerEnvironment
    let retention: TimeInterval
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            let now = environment.now()
            do {
                let removed = try await environment.store.garbageCollect(now: now, eventsEndedBefore: now - retention)
                if removed > 0 { logger.debug("garbage collected", metadata: ["rows": "\(removed)"]) }
            } catch {
                logger.warning("garbage collection failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(60)) }
        }
    }
}
