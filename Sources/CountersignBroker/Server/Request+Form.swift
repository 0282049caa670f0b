import Foundation
import Hummingbird

/// A query string read as HTML forms and OAuth clients write it
/// (`application/x-www-form-urlencoded`, RFC 6749 appendix B): `+` is a
/// space. Hummingbird's query parameters keep `+` as it is, so a `state`
/// of "a b" sent as `a+b` would come back as "a+b".
struct FormQuery {
    private let pairs: [(name: String, value: String)]

    init(_ query: String?) {
        pairs = (query ?? "").split(separator: "&").compactMap { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else {
                return nil
            }
            return (name, value)
        }
    }

    /// The first value of `name` (OAuth parameters are sent once).
    subscript(name: String) -> String? { pairs.first { $0.name == name }?.value }

    private static func decode(_ text: Substring) -> String? {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

extension Request {
    /// The query, read as a form.
    var formQuery: FormQuery { FormQuery(uri.query) }

    /// Decodes an `application/x-www-form-urlencoded` body.
    func decodeForm<T: Decodable>(_: T.Type, context: some RequestContext) async throws -> T {
        try Self.decodeForm(T.self, from: try await formBody(context: context))
    }

    /// The body of an `application/x-www-form-urlencoded` request.
    func formBody(context: some RequestContext) async throws -> String {
        guard let type = headers[.contentType].flatMap(MediaType.init(from:)),
            type.isType(.applicationUrlEncoded)
        else {
            throw APIError(.unsupportedMediaType, .unsupportedMediaType, "send the form as x-www-form-urlencoded")
        }
        var request = self
        return String(buffer: try await request.collectBody(upTo: context.maxUploadSize))
    }

    /// Decodes a form body read before. A field `T` does not read is
    /// ignored, however it is written and however often it comes (RFC 6749
    /// §3.1-3.2 ask that of OAuth's endpoints; a browser extension's additions
    /// to the page's forms should not break them either); one it reads is
    /// refused if malformed or sent twice.
    static func decodeForm<T: Decodable>(_: T.Type, from body: String) throws -> T {
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: fields(FormFieldNames.read(by: T.self), of: body))
        } catch {
            throw APIError.badRequest("the form is incomplete or malformed", code: .malformedForm)
        }
    }

    /// The `name=value` pairs of `body` whose name (before any `[`) is one
    /// of `names`; all of them if `names` is nil.
    static func fields(_ names: Set<String>?, of body: String) -> String {
        guard let names else { return body }
        return body.split(separator: "&").filter { pair in
            guard let equals = pair.firstIndex(of: "="), let name = pair[..<equals].removingPercentEncoding else {
                return false
            }
            return names.contains(String(name.prefix { $0 != "[" }))
        }.joined(separator: "&")
    }
}
