import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

extension BrokerHTTP1Channel {
    /// Answers a connection past the limits with a JSON error, then closes
    /// it. The request is read first (within the request read timeout):
    /// closing with unread bytes would reset the connection, and the
    /// client could lose the answer.
    func refuse(
        _ channel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, _ refusal: ConnectionCounter.Refusal,
        logger: Logger
    ) async {
        do {
            try await channel.executeThenClose { inbound, outbound in
                var parts = inbound.makeAsyncIterator()
                while let part = try await parts.next() {
                    if case .end = part { break }
                }
                let (status, body) = Self.answer(to: refusal)
                try await outbound.write(
                    .head(
                        HTTPResponse(
                            status: status,
                            headerFields: [
                                .connection: "close", .contentType: "application/json", .retryAfter: "5",
                                .contentLength: "\(body.readableBytes)",
                            ])))
                try await outbound.write(.body(body))
                try await outbound.write(.end(nil))
            }
        } catch {
            logger.trace("Could not answer a refused connection: \(error)")
        }
    }

    /// The status and JSON body of a refusal, in the shape of every error
    /// the API answers.
    static func answer(to refusal: ConnectionCounter.Refusal) -> (HTTPResponse.Status, ByteBuffer) {
        let (status, message): (HTTPResponse.Status, String) =
            switch refusal {
            case .overloaded: (.serviceUnavailable, "The broker has too many open connections; try again shortly.")
            case .address:
                (.tooManyRequests, "Too many open connections from this address; close some or try again later.")
            }
        return (status, ByteBuffer(string: #"{"error":"\#(refusal.rawValue)","message":"\#(message)"}"#))
    }
}
