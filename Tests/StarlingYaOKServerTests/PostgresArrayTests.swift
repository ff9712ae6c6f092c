import NIOCore
import PostgresNIO
import StarlingWire
@testable import StarlingYaOKServerPostgres
import Testing

/// The commit's `BYTEA[]` binds, written straight from the IDs and payloads,
/// are byte for byte what postgres-nio writes for an `Array<ByteBuffer>` of
/// the same bytes (its own encoder, the reference): empty, one, many, and an
/// empty element.
@Suite struct PostgresArrayTests {
    static func encoded(_ value: some PostgresNonThrowingEncodable) -> ByteBuffer {
        var b = ByteBuffer()
        value.encode(into: &b, context: .default)
        return b
    }

    static func reference(_ elements: [[UInt8]]) -> ByteBuffer {
        encoded(elements.map { ByteBuffer(bytes: $0) })
    }

    @Test(arguments: [0, 1, 3, 500])
    func idsAreWrittenAsPostgresNIOWritesTheirBytes(count: Int) {
        let ids = (0..<count).map { i in UserID(Bytes16(high: 0x0102_0304_0506_0708 &* UInt64(i + 1), low: ~UInt64(i))) }
        let ours = Self.encoded(PostgresServerStore.ByteaArray(ids: ids))
        #expect(ours == Self.reference(ids.map(\.bytes)))
        #expect(ours.readableBytes == 12 + (count == 0 ? 0 : 8 + 20 * count))
        #expect(PostgresServerStore.ByteaArray.psqlType == [ByteBuffer].psqlType && PostgresServerStore.ByteaArray.psqlFormat == .binary)
    }

    @Test func payloadsOfAnyLengthAreWrittenAsPostgresNIOWritesThem() {
        let payloads: [[UInt8]] = [[], [0x42], Array(repeating: 0xAB, count: 300), (0..<1_000).map { UInt8(truncatingIfNeeded: $0) }]
        let ours = Self.encoded(PostgresServerStore.ByteaArray(bytes: payloads))
        #expect(ours == Self.reference(payloads))
        // The control: other bytes give other bytes.
        #expect(ours != Self.reference(payloads.reversed()))
        #expect(Self.encoded(PostgresServerStore.ByteaArray(bytes: [])) == Self.reference([]))
    }
}
