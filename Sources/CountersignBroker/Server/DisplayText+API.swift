import CountersignCore

extension DisplayText.Field {
    /// `text` as stored, or a 400 that names the field and what is wrong
    /// with it.
    func require(_ text: String) throws -> String {
        switch DisplayText.check(text, as: self) {
        case .success(let stored): return stored
        case .failure(let refusal): throw APIError.badRequest(refusal.message(field: name))
        }
    }
}

extension DisplayText {
    /// An address a caller names, or a 400.
    static func requireAddress(_ text: String, field: String) throws -> String {
        switch checkAddress(text) {
        case .success(let address): return address
        case .failure(let refusal): throw APIError.badRequest(refusal.message(field: field))
        }
    }
}
