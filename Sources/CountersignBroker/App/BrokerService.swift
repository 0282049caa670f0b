import Foundation
public import Hummingbird
public import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

extension BrokerConfiguration {
    /// Runs `app` until SIGTERM or SIGINT, then lets held long-polls answer
    /// and requests in progress finish (for 30 s at most) before it returns.
    ///
    /// An address the broker cannot listen on is a one-line error naming
    /// it, and the run ends at once: every service stops when cancelled.
    public func run(_ app: some ApplicationProtocol, logger: Logger) async throws {
        var configuration = ServiceGroupConfiguration(
            services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = .seconds(30)
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch let error as IOError {
            throw listenFailure(error) ?? error
        }
    }

    /// Fails at once, in one line, when the address cannot be listened on,
    /// before the store is opened or anything else is said: a second
    /// broker started on a busy port says so first. The server binds again
    /// a moment later; what takes the port between the two is reported the
    /// same way.
    public func checkListenAddress() async throws {
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).get()
            try await channel.close()
        } catch let error as IOError {
            throw listenFailure(error) ?? error
        }
        if let radius {
            do {
                try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .channelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: radius.host, port: radius.port).get().close()
            } catch let error as IOError {
                let address =
                    radius.host.contains(":") ? "[\(radius.host)]:\(radius.port)" : "\(radius.host):\(radius.port)"
                switch error.errnoCode {
                case EADDRINUSE:
                    throw BrokerSetupError(
                        "UDP \(address) is already in use: another RADIUS server (FreeRADIUS?) or broker listens there")
                case EACCES:
                    throw BrokerSetupError(
                        "not allowed to listen on UDP \(address) (ports below 1024 need privileges: CAP_NET_BIND_SERVICE)"
                    )
                case EADDRNOTAVAIL:
                    throw BrokerSetupError(
                        "cannot listen on UDP \(address): \(radius.host) is not an address of this machine")
                default: throw error
                }
            }
        }
    }

    /// What a failure to listen means, for the errors a person can act on.
    func listenFailure(_ error: IOError) -> BrokerSetupError? {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        switch error.errnoCode {
        case EADDRINUSE:
            // Often the broker itself: the package's service listens on
            // 127.0.0.1:8080 from the moment it is installed.
            return BrokerSetupError(
                "\(address) is already in use: another process listens there, perhaps a broker already running "
                    + "(the countersign-broker package's service listens on 127.0.0.1:8080: use that one); "
                    + "choose --port to run a second")
        case EACCES:
            return BrokerSetupError("not allowed to listen on \(address) (ports below 1024 need privileges)")
        case EADDRNOTAVAIL:
            return BrokerSetupError("cannot listen on \(address): \(host) is not an address of this machine")
        default:
            return nil
        }
    }
}
