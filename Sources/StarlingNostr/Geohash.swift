/// Geohash cells as boxes of latitude and longitude (the base-32 alphabet
/// without a, i, l, o; bits interleaved longitude first): enough to find a
/// cell's eight neighbours, which a mesh bridge follows with its own cell
/// (bitchat BridgeService: the cell and its ring, so that two bridges on
/// either side of a cell's edge still meet).
public enum Geohash {
    static let alphabet = Array("0123456789bcdefghjkmnpqrstuvwxyz")
    static let values: [Character: Int] = Dictionary(uniqueKeysWithValues: alphabet.enumerated().map { ($0.element, $0.offset) })

    /// A cell's box: (south, north, west, east) in degrees. Nil for a
    /// geohash that is empty, over 12 characters or not base-32.
    public static func box(_ geohash: String) -> (south: Double, north: Double, west: Double, east: Double)? {
        guard (1...12).contains(geohash.count) else { return nil }
        var lat = (-90.0, 90.0), lon = (-180.0, 180.0), even = true
        for c in geohash {
            guard let v = values[c] else { return nil }
            for bit in stride(from: 4, through: 0, by: -1) {
                let on = (v >> bit) & 1 == 1
                if even {
                    let mid = (lon.0 + lon.1) / 2
                    if on { lon.0 = mid } else { lon.1 = mid }
                } else {
                    let mid = (lat.0 + lat.1) / 2
                    if on { lat.0 = mid } else { lat.1 = mid }
                }
                even.toggle()
            }
        }
        return (lat.0, lat.1, lon.0, lon.1)
    }

    /// The geohash of `length` characters (1–12) holding a point.
    public static func encode(latitude: Double, longitude: Double, length: Int) -> String {
        var lat = (-90.0, 90.0), lon = (-180.0, 180.0), even = true
        var out = ""
        for _ in 0..<max(1, min(12, length)) {
            var v = 0
            for _ in 0..<5 {
                v <<= 1
                if even {
                    let mid = (lon.0 + lon.1) / 2
                    if longitude >= mid { v |= 1; lon.0 = mid } else { lon.1 = mid }
                } else {
                    let mid = (lat.0 + lat.1) / 2
                    if latitude >= mid { v |= 1; lat.0 = mid } else { lat.1 = mid }
                }
                even.toggle()
            }
            out.append(alphabet[v])
        }
        return out
    }

    /// The cells of the same length around a cell, north first and then
    /// clockwise (N, NE, E, SE, S, SW, W, NW); longitude wraps at ±180°,
    /// and a cell at a pole has no neighbours past it (fewer than eight).
    public static func neighbours(of geohash: String) -> [String] {
        guard let b = box(geohash) else { return [] }
        let height = b.north - b.south, width = b.east - b.west
        let lat = (b.north + b.south) / 2, lon = (b.east + b.west) / 2
        var out: [String] = []
        for (dy, dx) in [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)] {
            let y = lat + Double(dy) * height
            guard y > -90, y < 90 else { continue }
            var x = lon + Double(dx) * width
            if x >= 180 { x -= 360 } else if x < -180 { x += 360 }
            let cell = encode(latitude: y, longitude: x, length: geohash.count)
            if cell != geohash, !out.contains(cell) { out.append(cell) }
        }
        return out
    }
}
