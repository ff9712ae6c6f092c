import Foundation
import StarlingMesh

/// Draws experiment results as an SVG picture: delivery against transmissions
/// per policy (left), and the latency distribution of each policy (right).
public enum SVGPlot {
    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

    public static func render(_ results: [BroadcastExperiment.Result], title: String) -> String {
        let width = 980.0, height = 420.0
        var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(width / 2)" y="22" text-anchor="middle" font-size="15">\(escape(title))</text>

        """
        // Left: delivery (%) against transmissions per broadcast ÷ CDS.
        let left = (x: 70.0, y: 50.0, w: 380.0, h: 300.0)
        let maxX = max(1, (results.map(\.transmissionsPerCDS).max() ?? 1) * 1.1)
        let minY = min(90, (results.map { $0.minDelivery * 100 }.min() ?? 90).rounded(.down))
        svg += axes(left, xLabel: "transmissions per broadcast ÷ greedy CDS", yLabel: "delivery (%)",
                    xTicks: ticks(0, maxX), yTicks: ticks(minY, 100), xRange: (0, maxX), yRange: (minY, 100))
        var dots: [(x: Double, y: Double)] = []
        for (i, r) in results.enumerated() {
            let c = colors[i % colors.count]
            let px = left.x + r.transmissionsPerCDS / maxX * left.w
            let py = left.y + left.h - (r.meanDelivery * 100 - minY) / (100 - minY) * left.h
            let pyMin = left.y + left.h - (max(minY, r.minDelivery * 100) - minY) / (100 - minY) * left.h
            svg += "<line x1=\"\(px)\" y1=\"\(py)\" x2=\"\(px)\" y2=\"\(pyMin)\" stroke=\"\(c)\" stroke-width=\"2\" opacity=\"0.5\"/>\n"
            svg += "<circle cx=\"\(px)\" cy=\"\(py)\" r=\"6\" fill=\"\(c)\"/>\n"
            dots.append((px, py))
        }
        let labels = placeLabels(dots.enumerated().map { (x: $0.element.x, y: $0.element.y, text: results[$0.offset].policy) },
                                 within: (x: left.x, y: left.y - 30, w: left.w + 90, h: left.h + 30))
        for (i, l) in labels.enumerated() {
            let c = colors[i % colors.count]
            if l.leader {
                svg += "<line x1=\"\(dots[i].x)\" y1=\"\(dots[i].y)\" x2=\"\(l.box.x + (l.box.x < dots[i].x ? l.box.w : 0))\" y2=\"\(l.box.y + l.box.h / 2)\" stroke=\"\(c)\" stroke-width=\"1\"/>\n"
            }
            svg += "<text x=\"\(l.box.x)\" y=\"\(l.box.y + l.box.h - 3)\" fill=\"\(c)\">\(escape(results[i].policy))</text>\n"
        }
        svg += "<text x=\"\(left.x)\" y=\"\(left.y + left.h + 48)\" font-size=\"11\" fill=\"#555\">dot: mean over broadcasts; bar: down to the worst broadcast</text>\n"

        // Right: latency distribution (CDF) per policy.
        let right = (x: 560.0, y: 50.0, w: 380.0, h: 300.0)
        let maxLatency = Double(results.flatMap(\.latencies).max() ?? 1)
        svg += axes(right, xLabel: "latency (virtual ms)", yLabel: "share of deliveries (%)",
                    xTicks: ticks(0, maxLatency), yTicks: ticks(0, 100), xRange: (0, maxLatency), yRange: (0, 100))
        for (i, r) in results.enumerated() where !r.latencies.isEmpty {
            let sorted = r.latencies.sorted()
            let step = max(1, sorted.count / 200)
            var points: [String] = []
            for k in stride(from: 0, to: sorted.count, by: step) + [sorted.count - 1] {
                let x = right.x + Double(sorted[k]) / maxLatency * right.w
                let y = right.y + right.h - Double(k + 1) / Double(sorted.count) * right.h
                points.append("\(x),\(y)")
            }
            svg += "<polyline fill=\"none\" stroke=\"\(colors[i % colors.count])\" stroke-width=\"2\" points=\"\(points.joined(separator: " "))\"/>\n"
            let legendY = right.y + right.h - 12 - Double(results.count - 1 - i) * 16
            svg += "<text x=\"\(right.x + right.w - 100)\" y=\"\(legendY)\" fill=\"\(colors[i % colors.count])\">\(escape(r.policy))</text>\n"
        }
        return svg + "</svg>\n"
    }

    static func axes(_ box: (x: Double, y: Double, w: Double, h: Double), xLabel: String, yLabel: String,
                     xTicks: [Double], yTicks: [Double], xRange: (Double, Double), yRange: (Double, Double)) -> String {
        var s = "<rect x=\"\(box.x)\" y=\"\(box.y)\" width=\"\(box.w)\" height=\"\(box.h)\" fill=\"none\" stroke=\"#333\"/>\n"
        for t in xTicks {
            let x = box.x + (t - xRange.0) / (xRange.1 - xRange.0) * box.w
            s += "<line x1=\"\(x)\" y1=\"\(box.y + box.h)\" x2=\"\(x)\" y2=\"\(box.y + box.h + 5)\" stroke=\"#333\"/>"
            s += "<text x=\"\(x)\" y=\"\(box.y + box.h + 18)\" text-anchor=\"middle\">\(label(t))</text>\n"
        }
        for t in yTicks {
            let y = box.y + box.h - (t - yRange.0) / (yRange.1 - yRange.0) * box.h
            s += "<line x1=\"\(box.x - 5)\" y1=\"\(y)\" x2=\"\(box.x + box.w)\" y2=\"\(y)\" stroke=\"#ddd\"/>"
            s += "<text x=\"\(box.x - 8)\" y=\"\(y + 4)\" text-anchor=\"end\">\(label(t))</text>\n"
        }
        s += "<text x=\"\(box.x + box.w / 2)\" y=\"\(box.y + box.h + 34)\" text-anchor=\"middle\">\(escape(xLabel))</text>\n"
        s += "<text transform=\"translate(\(box.x - 48),\(box.y + box.h / 2)) rotate(-90)\" text-anchor=\"middle\">\(escape(yLabel))</text>\n"
        return s
    }

    typealias Box = (x: Double, y: Double, w: Double, h: Double)

    /// Where to write each dot's label (12 px text, about 7 px a character):
    /// next to its dot where that overlaps no label placed before it and no
    /// other dot, else further away with a line to the dot. Dots are labelled
    /// from the top of the picture down; the boxes stay within `area` where they can.
    static func placeLabels(_ dots: [(x: Double, y: Double, text: String)], within area: Box) -> [(box: Box, leader: Bool)] {
        func overlaps(_ a: Box, _ b: Box) -> Bool { a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h }
        func inside(_ a: Box) -> Bool { a.x >= area.x - 60 && a.x + a.w <= area.x + area.w && a.y >= area.y && a.y + a.h <= area.y + area.h }
        let dotBoxes: [Box] = dots.map { (x: $0.x - 6, y: $0.y - 6, w: 12, h: 12) }
        var placed: [Box] = []
        var result = [(box: Box, leader: Bool)](repeating: ((0, 0, 0, 0), false), count: dots.count)
        for i in dots.indices.sorted(by: { (dots[$0].y, dots[$0].x) < (dots[$1].y, dots[$1].x) }) {
            let d = dots[i]
            let w = 7.0 * Double(d.text.count) + 2, h = 14.0
            // Beside the dot first (right, above-right, below-right, left…), then
            // at growing distances up and down, with a leader line.
            var tries: [(Box, Bool)] = [
                ((d.x + 9, d.y - h / 2, w, h), false), ((d.x + 8, d.y - h - 4, w, h), false),
                ((d.x + 8, d.y + 4, w, h), false), ((d.x - 9 - w, d.y - h / 2, w, h), false),
                ((d.x - w - 8, d.y - h - 4, w, h), false), ((d.x - w - 8, d.y + 4, w, h), false),
            ]
            for step in 1...12 {
                for dy in [-1.0, 1.0] {
                    tries.append(((d.x + 18, d.y - h / 2 + dy * Double(step) * h, w, h), true))
                    tries.append(((d.x - 18 - w, d.y - h / 2 + dy * Double(step) * h, w, h), true))
                }
            }
            let free = tries.first { box, _ in
                inside(box) && !placed.contains { overlaps($0, box) }
                    && !dotBoxes.enumerated().contains { $0.offset != i && overlaps($0.element, box) }
            } ?? tries[0]
            placed.append(free.0)
            result[i] = (free.0, free.1)
        }
        return result
    }

    static func ticks(_ lo: Double, _ hi: Double) -> [Double] {
        let span = max(hi - lo, 1e-9)
        let raw = span / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * magnitude }.first { span / $0 <= 6 } ?? raw
        var out: [Double] = []
        var t = (lo / step).rounded(.up) * step
        while t <= hi + step * 1e-9 { out.append(t); t += step }
        return out
    }

    static func label(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String((v * 100).rounded() / 100) }
    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
