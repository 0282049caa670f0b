import PostgresNIO

/// The conditions of a search built from optional filters, each value a
/// bind (`$n` in the order bound).
struct PostgresFilters {
    private(set) var conditions: [String] = []
    private(set) var binds = PostgresBindings()

    /// `value` bound: its `$n`.
    mutating func bind(_ value: some PostgresDynamicTypeEncodable) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    mutating func add(_ condition: String) { conditions.append(condition) }

    /// `SELECT … FROM table WHERE` the conditions, then `tail` (its binds
    /// bound before it is built).
    func select(_ columns: String, from table: String, then tail: String) -> PostgresQuery {
        let whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return PostgresQuery(unsafeSQL: "SELECT \(columns) FROM \(table)\(whereClause) \(tail)", binds: binds)
    }
}
