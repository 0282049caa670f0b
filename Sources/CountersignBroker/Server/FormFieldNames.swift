/// The names of the fields a form type reads, found by decoding it once from
/// a recorder that answers every question with an empty value and notes the
/// keys asked for. ``Request/decodeForm(_:from:)`` keeps only these fields
/// of a form, so that no other field, however it is written or repeated,
/// can make the form unreadable.
enum FormFieldNames {
    /// The names `T` asks for, or nil if it cannot be decoded from empty
    /// values (it checks them itself): then every field is kept.
    static func read<T: Decodable>(by _: T.Type) -> Set<String>? {
        let recorder = Recorder()
        guard (try? T(from: recorder)) != nil else { return nil }
        return recorder.names.names
    }

    /// The keys asked for, shared by the recorder's containers.
    private final class Names {
        var names: Set<String> = []
    }

    private struct Recorder: Decoder {
        let names = Names()
        var codingPath: [any CodingKey] { [] }
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy _: Key.Type) -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Fields(recorder: self))
        }
        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Unsupported() }
        func singleValueContainer() throws -> any SingleValueDecodingContainer { throw Unsupported() }
    }

    private struct Unsupported: Error {}

    /// A form's fields: each one present, and empty.
    private struct Fields<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let recorder: Recorder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        private func note(_ key: Key) { recorder.names.names.insert(key.stringValue) }

        func contains(_ key: Key) -> Bool {
            note(key)
            return true
        }
        func decodeNil(forKey key: Key) -> Bool {
            note(key)
            return false
        }
        func decode(_: String.Type, forKey key: Key) -> String {
            note(key)
            return ""
        }
        func decode(_: Bool.Type, forKey key: Key) -> Bool {
            note(key)
            return false
        }
        func decode(_: Double.Type, forKey key: Key) -> Double { zero(key) }
        func decode(_: Float.Type, forKey key: Key) -> Float { zero(key) }
        func decode(_: Int.Type, forKey key: Key) -> Int { zero(key) }
        func decode(_: Int8.Type, forKey key: Key) -> Int8 { zero(key) }
        func decode(_: Int16.Type, forKey key: Key) -> Int16 { zero(key) }
        func decode(_: Int32.Type, forKey key: Key) -> Int32 { zero(key) }
        func decode(_: Int64.Type, forKey key: Key) -> Int64 { zero(key) }
        func decode(_: UInt.Type, forKey key: Key) -> UInt { zero(key) }
        func decode(_: UInt8.Type, forKey key: Key) -> UInt8 { zero(key) }
        func decode(_: UInt16.Type, forKey key: Key) -> UInt16 { zero(key) }
        func decode(_: UInt32.Type, forKey key: Key) -> UInt32 { zero(key) }
        func decode(_: UInt64.Type, forKey key: Key) -> UInt64 { zero(key) }

        private func zero<Number: Numeric>(_ key: Key) -> Number {
            note(key)
            return 0
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            note(key)
            // A field of a form is one value; a type made of more is not one.
            throw Unsupported()
        }
        func nestedContainer<Nested: CodingKey>(keyedBy _: Nested.Type, forKey _: Key) throws
            -> KeyedDecodingContainer<Nested>
        { throw Unsupported() }
        func nestedUnkeyedContainer(forKey _: Key) throws -> any UnkeyedDecodingContainer { throw Unsupported() }
        func superDecoder() throws -> any Decoder { throw Unsupported() }
        func superDecoder(forKey _: Key) throws -> any Decoder { throw Unsupported() }
    }
}
