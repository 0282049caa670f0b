import CountersignCore
import Foundation
import HTTPTypes
import Hummingbird

/// A JSON response in the wire format (``WireCoding``), with a status.
struct JSONBody<Value: Encodable & Sendable>: ResponseGenerator {
    var status: HTTPResponse.Status = .ok
    var headers: HTTPFields = [:]
    let value: Value

    init(_ value: Value, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) {
        self.value = value
        self.status = status
        self.headers = headers
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        headers[.cacheControl] = headers[.cacheControl] ?? "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: try body()))
    }

    /// The value as JSON; the documents of every round trip write themselves.
    func body() throws -> ByteBuffer {
        if let document = value as? any WireJSONWritable { return ByteBuffer(bytes: document.wireJSON()) }
        return ByteBuffer(bytes: try WireCoding.encoder().encode(value))
    }
}

extension Request {
    /// Decodes a JSON body: `application/json` only, at most the context's
    /// upload size, with a message that says which field is wrong.
    ///
    /// Out of line: inlined, the body's collection and decoding made every
    /// caller's async frame larger, and a connection's task keeps its
    /// frames at the deepest they reached (docs/benchmarks.md).
    @inline(never)
    func decodeJSON<T: Decodable>(_: T.Type, context: some RequestContext) async throws -> T {
        guard let type = headers[.contentType].flatMap(MediaType.init(from:)), type.isType(.applicationJson) else {
            throw APIError(.unsupportedMediaType, .unsupportedMediaType, "send the body as application/json")
        }
        var request = self
        let buffer = try await request.collectBody(upTo: context.maxUploadSize)
        do {
            return try WireCoding.decoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest("malformed JSON body: \(Self.describe(error))", code: .malformedBody)
        }
    }

    /// Reads an optional JSON body with no fields of its own: none, or any
    /// object. Anything else (an array, a string, malformed JSON) is a 400,
    /// as the contract says.
    func requireObjectIfBody(context: some RequestContext) async throws {
        guard hasBody else { return }
        _ = try await decodeJSON(IgnoredObject.self, context: context)
    }

    /// Whether the request says it carries a body: a length above 0, or a
    /// chunked one.
    var hasBody: Bool {
        let length = headers[.contentLength].flatMap { Int($0) }
        return length.map { $0 > 0 } ?? (headers[.transferEncoding] != nil)
    }

    /// Any JSON object, its fields ignored.
    private struct IgnoredObject: Decodable {
        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws { _ = try decoder.container(keyedBy: Key.self) }
    }

    /// A reading of a decoding error that names the field but not the type internals.
    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case .keyNotFound(let key, let context): return "missing field \(key.stringValue)\(path(context))"
        case .typeMismatch(_, let context): return "wrong type\(path(context))"
        case .valueNotFound(_, let context): return "null value\(path(context))"
        case .dataCorrupted(let context): return "\(context.debugDescription)\(path(context))"
        @unknown default: return "unreadable"
        }
    }

    /// The `wait` query parameter in seconds: absent means 0; bounded by `max`.
    func waitSeconds(max: TimeInterval) throws -> TimeInterval {
        guard let text = uri.queryParameters["wait"] else { return 0 }
        guard let seconds = Int(text), seconds >= 0 else {
            throw APIError.badRequest("wait must be a whole number of seconds ≥ 0")
        }
        return min(TimeInterval(seconds), max)
    }
}
