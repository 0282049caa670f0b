import NIOCore
import PostgresNIO

/// The conditions of a search built from optional filters, each value a
/// bind (`$n` in the order bound).
struct PostgresFilters {
    private(set) var conditions: [String] = []
    private(set) var binds = PostgresBindings()
    private var values: [PostgresData] = []

    /// `value` bound: its `$n`, cast to its type (so that the statement
    /// can be prepared, ``PostgresStatement/Preparable``).
    mutating func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
        binds.append(value)
        var buffer = ByteBuffer()
        value.encode(into: &buffer, context: .default)
        values.append(PostgresData(type: value.psqlType, formatCode: value.psqlFormat, value: buffer))
        return "$\(binds.count)::\(value.psqlType.knownSQLName ?? "unknown")"
    }

    mutating func add(_ condition: String) { conditions.append(condition) }

    /// `SELECT … FROM table WHERE` the conditions, then `tail` (its binds
    /// bound before it is built).
    func select(_ columns: String, from table: String, then tail: String) -> PostgresStatement {
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        let sql = "SELECT \(columns) FROM \(table)\(whereClause) \(tail)"
        let typed = values.allSatisfy { $0.formatCode == .binary && $0.type.knownSQLName != nil }
        return PostgresStatement(
            PostgresQuery(unsafeSQL: sql, binds: binds),
            preparable: typed ? .init(sql: sql, values: values) : nil)
    }
}
