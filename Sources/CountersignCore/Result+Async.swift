extension Result where Failure == any Error {
    /// The outcome of an async throwing body, to act on it (clean up, say)
    /// before rethrowing.
    public init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
