import StarlingMesh

/// An undirected graph of nodes 0..<n, with positions when it has a geometry.
public struct Topology: Sendable {
    public var neighbors: [[Int]]
    public var positions: [(x: Double, y: Double)]?

    public init(neighbors: [[Int]], positions: [(x: Double, y: Double)]? = nil) {
        self.neighbors = neighbors.map { Array(Set($0)).sorted() }
        self.positions = positions
    }

    public var nodeCount: Int { neighbors.count }
    public var edgeCount: Int { neighbors.reduce(0) { $0 + $1.count } / 2 }
    public var meanDegree: Double { nodeCount == 0 ? 0 : Double(2 * edgeCount) / Double(nodeCount) }
    public var maxDegree: Int { neighbors.map(\.count).max() ?? 0 }

    /// 0 – 1 – 2 – … – n−1.
    public static func line(_ n: Int) -> Topology {
        Topology(neighbors: (0..<n).map { i in [i - 1, i + 1].filter { $0 >= 0 && $0 < n } },
                 positions: (0..<n).map { (Double($0), 0) })
    }

    /// A width × height grid, 4-connected.
    public static func grid(width: Int, height: Int) -> Topology {
        var nb = [[Int]](repeating: [], count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let i = y * width + x
                if x + 1 < width { nb[i].append(i + 1); nb[i + 1].append(i) }
                if y + 1 < height { nb[i].append(i + width); nb[i + width].append(i) }
            }
        }
        return Topology(neighbors: nb, positions: (0..<width * height).map { (Double($0 % width), Double($0 / width)) })
    }

    /// n points uniform in the unit square, linked when closer than `radius`.
    public static func randomGeometric(nodes n: Int, radius: Double, rng: inout SeededGenerator) -> Topology {
        let points = (0..<n).map { _ in (x: rng.unit(), y: rng.unit()) }
        return geometric(points, radius: radius)
    }

    /// The radius that gives about `meanDegree` links per node in the unit square
    /// (with the loss at the edges of the square corrected for).
    public static func radius(nodes n: Int, meanDegree d: Double) -> Double {
        // Expected degree with boundary effects: (n−1)(π r² − 8/3 r³ + r⁴/2).
        var lo = 0.0, hi = 1.0
        for _ in 0..<60 {
            let r = (lo + hi) / 2
            let expected = Double(n - 1) * (Double.pi * r * r - 8.0 / 3.0 * r * r * r + r * r * r * r / 2)
            if expected < d { lo = r } else { hi = r }
        }
        return (lo + hi) / 2
    }

    static func geometric(_ points: [(x: Double, y: Double)], radius: Double) -> Topology {
        let n = points.count
        // Bucket grid so that neighbour search is about linear.
        let cells = max(1, Int(1 / radius))
        var grid = [[Int]](repeating: [], count: cells * cells)
        func cell(_ p: (x: Double, y: Double)) -> (Int, Int) {
            (min(cells - 1, Int(p.x * Double(cells))), min(cells - 1, Int(p.y * Double(cells))))
        }
        for (i, p) in points.enumerated() { let (cx, cy) = cell(p); grid[cy * cells + cx].append(i) }
        var nb = [[Int]](repeating: [], count: n)
        let r2 = radius * radius
        for (i, p) in points.enumerated() {
            let (cx, cy) = cell(p)
            for dy in -1...1 { for dx in -1...1 {
                let x = cx + dx, y = cy + dy
                guard x >= 0, y >= 0, x < cells, y < cells else { continue }
                for j in grid[y * cells + x] where j > i {
                    let ddx = points[j].x - p.x, ddy = points[j].y - p.y
                    if ddx * ddx + ddy * ddy < r2 { nb[i].append(j); nb[j].append(i) }
                }
            } }
        }
        return Topology(neighbors: nb, positions: points)
    }

    /// `clusters` random geometric clusters of `size` nodes each, side by side,
    /// joined in a chain by `bridges` links between neighbouring clusters.
    public static func clusters(_ clusters: Int, size: Int, meanDegree: Double, bridges: Int, rng: inout SeededGenerator) -> Topology {
        var neighbors: [[Int]] = []
        var positions: [(x: Double, y: Double)] = []
        let r = radius(nodes: size, meanDegree: meanDegree)
        for c in 0..<clusters {
            let part = randomGeometric(nodes: size, radius: r, rng: &rng)
            let base = neighbors.count
            neighbors += part.neighbors.map { $0.map { $0 + base } }
            positions += part.positions!.map { (x: $0.x + Double(c) * 1.5, y: $0.y) }
        }
        for c in 0..<(clusters - 1) {
            for _ in 0..<bridges {
                let a = c * size + Int(rng.next() % UInt64(size)), b = (c + 1) * size + Int(rng.next() % UInt64(size))
                neighbors[a].append(b)
                neighbors[b].append(a)
            }
        }
        return Topology(neighbors: neighbors, positions: positions)
    }

    /// Keeps at most `k` links per node (a phone holds 6–8), dropping the
    /// longest (or, without positions, the last) links first.
    public func limitingDegree(to k: Int) -> Topology {
        func length(_ a: Int, _ b: Int) -> Double {
            guard let p = positions else { return Double(b) }
            let dx = p[a].x - p[b].x, dy = p[a].y - p[b].y
            return dx * dx + dy * dy
        }
        var nb = neighbors.map(Set.init)
        let edges = (0..<nodeCount).flatMap { a in neighbors[a].filter { $0 > a }.map { (a, $0) } }
            .sorted { length($0.0, $0.1) > length($1.0, $1.1) }
        for (a, b) in edges where nb[a].count > k || nb[b].count > k {
            nb[a].remove(b)
            nb[b].remove(a)
        }
        return Topology(neighbors: nb.map(Array.init), positions: positions)
    }

    /// Hop distance from `source` to every node (nil when unreachable).
    public func distances(from source: Int) -> [Int?] {
        var d = [Int?](repeating: nil, count: nodeCount)
        d[source] = 0
        var queue = [source], head = 0
        while head < queue.count {
            let u = queue[head]; head += 1
            for v in neighbors[u] where d[v] == nil { d[v] = d[u]! + 1; queue.append(v) }
        }
        return d
    }

    /// The nodes of the largest connected component.
    public var largestComponent: [Int] {
        var seen = [Bool](repeating: false, count: nodeCount)
        var best: [Int] = []
        for s in 0..<nodeCount where !seen[s] {
            let comp = distances(from: s).enumerated().compactMap { $0.element == nil ? nil : $0.offset }
            comp.forEach { seen[$0] = true }
            if comp.count > best.count { best = comp }
        }
        return best
    }

    /// A connected dominating set found greedily (Guha and Khuller's first
    /// algorithm): a near-lower bound on the transmissions a broadcast needs.
    public func greedyConnectedDominatingSet(of component: [Int]) -> Set<Int> {
        guard let start = component.max(by: { neighbors[$0].count < neighbors[$1].count }) else { return [] }
        enum Color { case white, gray, black }
        var color = [Color](repeating: .white, count: nodeCount)
        let ordered = component.sorted() // ties go to the lowest index: the same set every run
        var white = component.count
        var black: Set<Int> = []
        func blacken(_ u: Int) {
            if color[u] == .white { white -= 1 }
            color[u] = .black
            black.insert(u)
            for v in neighbors[u] where color[v] == .white { color[v] = .gray; white -= 1 }
        }
        blacken(start)
        while white > 0 {
            var best = -1, gain = -1
            for u in ordered where color[u] == .gray {
                let g = neighbors[u].reduce(0) { $0 + (color[$1] == .white ? 1 : 0) }
                if g > gain { gain = g; best = u }
            }
            guard best >= 0, gain > 0 else { break }
            blacken(best)
        }
        return black
    }
}
