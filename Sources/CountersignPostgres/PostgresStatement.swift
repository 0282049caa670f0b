import NIOCore
import PostgresNIO

/// A statement as the store's operations write it: SQL with its values
/// interpolated as parameters, exactly as `PostgresQuery` takes them, and
/// the same statement in the form ``PreparedStatements`` prepares once
/// per connection.
///
/// One built from SQL alone (``init(unsafeSQL:)``), or one that is not a
/// SELECT, INSERT, UPDATE, DELETE or WITH, runs unprepared.
struct PostgresStatement: Sendable, ExpressibleByStringInterpolation {
    var query: PostgresQuery
    /// The statement with each parameter cast to its type (`$1::TEXT`),
    /// and their values; nil when it cannot be prepared.
    let preparable: Preparable?

    /// A prepared statement names no parameter types, so that the server
    /// infers them: the casts give each the type its value is encoded as,
    /// which is the type postgres-nio names for an unprepared one. A nil is
    /// not cast, and its type is inferred, as it is unprepared.
    struct Preparable: Sendable {
        let sql: String
        let values: [PostgresData]
    }

    /// A statement of SQL built at run time (migrations, administration,
    /// BEGIN), never with untrusted input; it runs unprepared.
    init(unsafeSQL sql: String) {
        self.query = PostgresQuery(unsafeSQL: sql)
        self.preparable = nil
    }

    /// `query`, prepared as `preparable` says.
    init(_ query: PostgresQuery, preparable: Preparable?) {
        self.query = query
        self.preparable = preparable.flatMap { PreparedStatements.preparable($0.sql) ? $0 : nil }
    }

    init(stringLiteral value: String) {
        self.query = PostgresQuery(stringLiteral: value)
        self.preparable = PreparedStatements.preparable(value) ? Preparable(sql: value, values: []) : nil
    }

    init(stringInterpolation: StringInterpolation) {
        self.query = PostgresQuery(stringInterpolation: stringInterpolation.query)
        self.preparable =
            stringInterpolation.preparable && PreparedStatements.preparable(stringInterpolation.typedSQL)
            ? Preparable(sql: stringInterpolation.typedSQL, values: stringInterpolation.values) : nil
    }

    /// `PostgresQuery`'s interpolation, and the statement to prepare.
    struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var query: PostgresQuery.StringInterpolation
        var typedSQL = ""
        var values: [PostgresData] = []
        var preparable = true

        init(literalCapacity: Int, interpolationCount: Int) {
            query = .init(literalCapacity: literalCapacity, interpolationCount: interpolationCount)
            typedSQL.reserveCapacity(literalCapacity + interpolationCount * 12)
            values.reserveCapacity(interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) {
            query.appendLiteral(literal)
            typedSQL.append(literal)
        }

        mutating func appendInterpolation<Value: PostgresDynamicTypeEncodable>(_ value: Value) {
            query.appendInterpolation(value)
            try? add(value)
        }

        mutating func appendInterpolation<Value: PostgresDynamicTypeEncodable>(_ value: Value?) {
            query.appendInterpolation(value)
            try? add(value)
        }

        mutating func appendInterpolation<Value: PostgresThrowingDynamicTypeEncodable>(_ value: Value) throws {
            try query.appendInterpolation(value)
            try add(value)
        }

        mutating func appendInterpolation<Value: PostgresThrowingDynamicTypeEncodable>(_ value: Value?) throws {
            try query.appendInterpolation(value)
            try add(value)
        }

        mutating func appendInterpolation(unescaped text: String) {
            query.appendInterpolation(unescaped: text)
            typedSQL.append(text)
        }

        /// Adds `value`'s parameter to the statement to prepare (it was
        /// encoded for `query` without failing, or `query` threw).
        private mutating func add<Value: PostgresThrowingDynamicTypeEncodable>(_ value: Value?) throws {
            typedSQL.append("$\(values.count + 1)")
            guard let value else {
                values.append(PostgresData(type: .null))
                return
            }
            guard value.psqlFormat == .binary, let type = value.psqlType.knownSQLName else {
                preparable = false
                values.append(PostgresData(type: .null))
                return
            }
            var buffer = ByteBuffer()
            try value.encode(into: &buffer, context: .default)
            values.append(PostgresData(type: value.psqlType, formatCode: .binary, value: buffer))
            typedSQL.append("::\(type)")
        }
    }
}
