/// One second of a run, as the live progress line saw it.
struct TimelineSample: Sendable {
    var second: Double            // seconds since the measured phase began (negative during warm-up)
    var phase: String             // e.g. "warm-up", "measure", "drain"
    var sentPerSecond: Double
    var deliveriesPerSecond: Double
    var latencyP50Ms: Double      // latency of deliveries that arrived in that second; 0 when none
    var latencyP99Ms: Double
    var latencyMaxMs: Double
}

/// A self-contained HTML page (no scripts, no external resources): a summary table and
/// inline-SVG charts of throughput and latency over time.
enum HTMLReport {
    static func render(title: String, summary: [(String, String)], samples: [TimelineSample]) -> String {
        // Absurd seconds would only squash the axis; non-finite ones cannot be placed at all.
        let points = samples.filter { $0.second.isFinite && abs($0.second) < 1e9 }.sorted { $0.second < $1.second }
        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>\(style)</style>
            </head>
            <body>
            <h1>\(escape(title))</h1>\n
            """
        if !summary.isEmpty {
            html += "<h2>Summary</h2>\n<table class=\"summary\">\n"
            for (key, value) in summary {
                html += "<tr><th scope=\"row\">\(escape(key))</th><td>\(escape(value))</td></tr>\n"
            }
            html += "</table>\n"
        }
        if points.isEmpty {
            html += "<p class=\"note\">No timeline samples were recorded, so there is nothing to chart.</p>\n"
        } else {
            let chart = TimelineChart(points)
            html += """
                <p class="key"><span class="swatch measure"></span>measured phase (counts toward the summary)\
                <span class="swatch other"></span>other phases (warm-up, drain; excluded)</p>
                <h2>Throughput</h2>\n
                """
            html += chart.svg(label: "Deliveries and sent messages per second over time", scales: [
                ChartScale(title: "deliveries/s", lines: [
                    ChartLine(label: "deliveries/s (left axis)", color: "#1f6fb4", dashed: false,
                              values: points.map { plotted($0.deliveriesPerSecond) }),
                ]),
                ChartScale(title: "sent msgs/s", lines: [
                    ChartLine(label: "sent msgs/s (right axis)", color: "#8a4fb8", dashed: true,
                              values: points.map { plotted($0.sentPerSecond) }),
                ]),
            ])
            // A second with no deliveries has no latency; plotting its zeros would fake a dip.
            func latency(_ pick: (TimelineSample) -> Double) -> [Double?] {
                points.map { hasLatency($0) ? plotted(pick($0)) : nil }
            }
            html += "<h2>Delivery latency</h2>\n"
            html += chart.svg(label: "Delivery latency p50, p99 and max per second, in milliseconds", scales: [
                ChartScale(title: "latency (ms)", lines: [
                    ChartLine(label: "p50", color: "#2e8b57", dashed: false, values: latency { $0.latencyP50Ms }),
                    ChartLine(label: "p99", color: "#e07b00", dashed: false, values: latency { $0.latencyP99Ms }),
                    ChartLine(label: "max", color: "#c62828", dashed: true, values: latency { $0.latencyMaxMs }),
                ]),
            ])
            html += "<p class=\"note\">Seconds without deliveries are left as gaps in the latency chart.</p>\n"
            html += dataTable(points)
        }
        return html + "</body>\n</html>\n"
    }

    private static func dataTable(_ points: [TimelineSample]) -> String {
        var out = """
            <details><summary>Per-second data (\(formatNumber(Double(points.count), decimals: 0)) samples)</summary>
            <table class="data">
            <tr><th>second</th><th>phase</th><th>sent/s</th><th>deliveries/s</th>\
            <th>p50 ms</th><th>p99 ms</th><th>max ms</th></tr>\n
            """
        for p in points {
            let cls = p.phase == "measure" ? " class=\"measure\"" : ""
            let cell = { (value: Double, decimals: Int) in
                value.isFinite ? formatNumber(value, decimals: decimals, trim: true) : "–"
            }
            let ms = hasLatency(p) ? [p.latencyP50Ms, p.latencyP99Ms, p.latencyMaxMs].map { cell($0, 3) } : ["–", "–", "–"]
            let cells = [formatNumber(p.second, decimals: 3, trim: true), escape(p.phase),
                         cell(p.sentPerSecond, 0), cell(p.deliveriesPerSecond, 0)] + ms
            out += "<tr\(cls)>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>\n"
        }
        return out + "</table>\n</details>\n"
    }

    private static let style = """
        body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;\
        color:#1b1f24;background:#fff;max-width:1000px;margin:2rem auto;padding:0 1rem}
        h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.15rem;margin:2rem 0 .5rem}
        table{border-collapse:collapse;font-variant-numeric:tabular-nums}
        th,td{padding:.2rem .8rem;border-bottom:1px solid #e3e6ea;text-align:left}
        th{font-weight:600;color:#3a4048}
        table.data td:nth-child(n+3){text-align:right}table.data tr.measure{background:#eef4fc}
        svg.chart{width:100%;height:auto;display:block;font-family:inherit}
        svg.chart text{font-size:12px;fill:#333}svg.chart text.phase{font-size:11px;fill:#6a7380}
        .band-measure,.swatch.measure{fill:#e3eefb;background:#e3eefb}
        .band-other,.swatch.other{fill:#f2f2f2;background:#f2f2f2}
        .grid{stroke:#d9dee4;stroke-width:1}.frame{fill:none;stroke:#9aa3ad}
        .note{color:#59606a;font-style:italic}.key{color:#3a4048}
        .swatch{display:inline-block;width:.9em;height:.9em;vertical-align:-.1em;border:1px solid #c8cdd3;\
        margin:0 .35em 0 1em}.swatch:first-child{margin-left:0}
        details{margin-top:2rem}summary{cursor:pointer;font-weight:600}
        """
}

// Everything below is nested in HTMLReport so no names leak into the module.
extension HTMLReport {
    fileprivate struct ChartLine {
        var label: String
        var color: String
        var dashed: Bool
        var values: [Double?]         // nil leaves a gap
    }

    /// One y axis (the first scale is drawn on the left, a second one on the right) and the lines it measures.
    fileprivate struct ChartScale {
        var title: String
        var lines: [ChartLine]
    }

    /// A linear 0...top axis whose ticks are multiples of a 1/2/5 × 10^k step.
    fileprivate struct ValueAxis {
        let top: Double
        let step: Double
        let exponent: Int

        init(_ scale: ChartScale) {
            let peak = scale.lines.flatMap { $0.values.compactMap { $0 } }.max() ?? 0
            // All-zero data still gets a readable 0...1 axis; tiny data stops at 0.001.
            let reach = peak > 0 ? max(peak, 0.001) : 1
            (step, exponent) = niceStep(reach / 5)
            top = (reach / step).rounded(.up) * step
        }

        /// Grouped digits up to 999,999,999; beyond that an SI suffix keeps labels inside the margin.
        func label(_ value: Double) -> String {
            guard value != 0 else { return "0" }
            var (unit, power, suffix) = (1.0, 0, "")
            for candidate in [(1e9, 9, "G"), (1e12, 12, "T"), (1e15, 15, "P")] where top >= candidate.0 {
                (unit, power, suffix) = candidate
            }
            return formatNumber(value / unit, decimals: max(0, power - exponent)) + suffix
        }

        var ticks: [Double] {
            let count = Int(exactly: (top / step).rounded()) ?? 1
            return (0...max(count, 1)).map { Double($0) * step }
        }
    }

    fileprivate struct TimelineChart {
        static let width = 960.0, height = 340.0
        static let left = 86.0, right = 86.0, top = 44.0, bottom = 48.0
        static let plotWidth = width - left - right, plotHeight = height - top - bottom

        let samples: [TimelineSample]
        let x0: Double, x1: Double

        /// `samples` must be non-empty and sorted by second.
        init(_ samples: [TimelineSample]) {
            self.samples = samples
            let first = samples.first?.second ?? 0, last = samples.last?.second ?? 0
            // Pad by half a sample interval so the first and last seconds get full-width phase bands.
            let spacing = samples.count > 1 ? (last - first) / Double(samples.count - 1) : 1
            var lo = first - spacing / 2, hi = last + spacing / 2
            if hi - lo < 1 { let mid = (lo + hi) / 2; lo = mid - 0.5; hi = mid + 0.5 }
            x0 = lo; x1 = hi
        }

        func x(_ second: Double) -> Double { Self.left + (second - x0) / (x1 - x0) * Self.plotWidth }
        func y(_ value: Double, _ axis: ValueAxis) -> Double {
            Self.top + Self.plotHeight * (1 - min(max(value / axis.top, 0), 1))
        }

        func svg(label: String, scales: [ChartScale]) -> String {
            let (w, h, l, t, pw, ph) = (Self.width, Self.height, Self.left, Self.top, Self.plotWidth, Self.plotHeight)
            var out = "<svg class=\"chart\" viewBox=\"0 0 \(coord(w)) \(coord(h))\" role=\"img\" aria-label=\"\(escape(label))\">\n"
            // Phase bands: each sample owns the span up to the midpoints with its neighbours.
            var start = 0
            while start < samples.count {
                var end = start
                while end + 1 < samples.count && samples[end + 1].phase == samples[start].phase { end += 1 }
                let a = start == 0 ? x0 : (samples[start - 1].second + samples[start].second) / 2
                let b = end == samples.count - 1 ? x1 : (samples[end].second + samples[end + 1].second) / 2
                let (xa, xb) = (x(a), x(b))
                let kind = samples[start].phase == "measure" ? "band-measure" : "band-other"
                out += "<rect class=\"\(kind)\" x=\"\(coord(xa))\" y=\"\(coord(t))\" width=\"\(coord(xb - xa))\" height=\"\(coord(ph))\"/>\n"
                if xb - xa > Double(samples[start].phase.count) * 5.8 + 6 {
                    out += "<text class=\"phase\" x=\"\(coord((xa + xb) / 2))\" y=\"\(coord(t + 14))\" text-anchor=\"middle\">\(escape(samples[start].phase))</text>\n"
                }
                start = end + 1
            }
            // X ticks in seconds.
            let (xStep, xExp) = niceStep((x1 - x0) / 10)
            if let first = Int(exactly: (x0 / xStep).rounded(.up)), let last = Int(exactly: (x1 / xStep).rounded(.down)),
               first <= last, last - first <= 100 {
                for i in first...last {
                    let px = x(Double(i) * xStep)
                    out += "<line class=\"grid\" x1=\"\(coord(px))\" y1=\"\(coord(t))\" x2=\"\(coord(px))\" y2=\"\(coord(t + ph + 5))\"/>"
                    out += "<text x=\"\(coord(px))\" y=\"\(coord(t + ph + 19))\" text-anchor=\"middle\">\(formatNumber(Double(i) * xStep, decimals: max(0, -xExp)))</text>\n"
                }
            }
            out += "<text x=\"\(coord(l + pw / 2))\" y=\"\(coord(h - 8))\" text-anchor=\"middle\">seconds since the measured phase began</text>\n"
            // Y axes: grid lines follow the left axis only, so the right axis cannot be mistaken for it.
            let axes = scales.prefix(2).map(ValueAxis.init)
            for (index, (scale, axis)) in zip(scales, axes).enumerated() {
                let onLeft = index == 0
                // With two axes, tint each one like its line so readers can pair them.
                let color = scales.count > 1 && scale.lines.count == 1 ? scale.lines[0].color : "#333"
                for tick in axis.ticks {
                    let py = y(tick, axis)
                    if onLeft { out += "<line class=\"grid\" x1=\"\(coord(l - 5))\" y1=\"\(coord(py))\" x2=\"\(coord(l + pw))\" y2=\"\(coord(py))\"/>" }
                    out += "<text x=\"\(coord(onLeft ? l - 8 : l + pw + 8))\" y=\"\(coord(py + 4))\" text-anchor=\"\(onLeft ? "end" : "start")\" style=\"fill:\(color)\">\(axis.label(tick))</text>\n"
                }
                let tx = onLeft ? 16 : w - 12, ty = t + ph / 2
                out += "<text x=\"\(coord(tx))\" y=\"\(coord(ty))\" text-anchor=\"middle\" transform=\"rotate(-90 \(coord(tx)) \(coord(ty)))\" style=\"fill:\(color)\">\(escape(scale.title))</text>\n"
            }
            out += "<rect class=\"frame\" x=\"\(coord(l))\" y=\"\(coord(t))\" width=\"\(coord(pw))\" height=\"\(coord(ph))\"/>\n"
            var legendX = l, anyValue = false
            for (scale, axis) in zip(scales, axes) {
                for line in scale.lines {
                    anyValue = anyValue || line.values.contains { $0 != nil }
                    out += draw(line, axis)
                    let dash = line.dashed ? " stroke-dasharray=\"6 4\"" : ""
                    out += "<line x1=\"\(coord(legendX))\" y1=\"18\" x2=\"\(coord(legendX + 22))\" y2=\"18\" stroke=\"\(line.color)\" stroke-width=\"2.5\"\(dash)/>"
                    out += "<text x=\"\(coord(legendX + 28))\" y=\"22\">\(escape(line.label))</text>\n"
                    legendX += 44 + Double(line.label.count) * 7
                }
            }
            if !anyValue {
                out += "<text x=\"\(coord(l + pw / 2))\" y=\"\(coord(t + ph / 2))\" text-anchor=\"middle\">no data in any second</text>\n"
            }
            return out + "</svg>\n"
        }

        /// A path through consecutive present values; a lone value between gaps becomes a dot.
        private func draw(_ line: ChartLine, _ axis: ValueAxis) -> String {
            var path = "", dots = "", run: [(x: String, y: String)] = []
            func flush() {
                if run.count > 1 { path += "M" + run.map { "\($0.x),\($0.y)" }.joined(separator: "L") }
                else if let p = run.first { dots += "<circle cx=\"\(p.x)\" cy=\"\(p.y)\" r=\"3\" fill=\"\(line.color)\"/>" }
                run = []
            }
            for (sample, value) in zip(samples, line.values) {
                if let value { run.append((coord(x(sample.second)), coord(y(value, axis)))) } else { flush() }
            }
            flush()
            let dash = line.dashed ? " stroke-dasharray=\"6 4\"" : ""
            let stroke = path.isEmpty ? "" : "<path d=\"\(path)\" fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"1.8\" stroke-linejoin=\"round\" stroke-linecap=\"round\"\(dash)/>"
            return stroke + dots + "\n"
        }
    }

    fileprivate static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for ch in text {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(ch)
            }
        }
        return out
    }

    /// A non-finite value is unknown (nil, drawn as a gap); others are clamped to 0...1e15,
    /// far beyond any real rate or latency, so scaling can never overflow.
    fileprivate static func plotted(_ value: Double) -> Double? {
        value.isFinite ? min(max(value, 0), 1e15) : nil
    }

    fileprivate static func hasLatency(_ s: TimelineSample) -> Bool {
        [s.latencyP50Ms, s.latencyP99Ms, s.latencyMaxMs].contains { $0.isFinite && $0 > 0 }
    }

    /// The 1/2/5 × 10^k step nearest above `raw`, with its decimal exponent k.
    fileprivate static func niceStep(_ raw: Double) -> (Double, Int) {
        guard raw.isFinite, raw > 1e-12, raw < 1e300 else { return (1, 0) }
        var power = 1.0, exponent = 0
        while power * 10 <= raw { power *= 10; exponent += 1 }
        while power > raw { power /= 10; exponent -= 1 }
        let fraction = raw / power
        if fraction <= 1 { return (power, exponent) }
        if fraction <= 2 { return (2 * power, exponent) }
        if fraction <= 5 { return (5 * power, exponent) }
        return (10 * power, exponent + 1)
    }

    /// `value` rounded to `decimals` places with thousands separators (1,245,804.5); never "nan"/"inf".
    fileprivate static func formatNumber(_ value: Double, decimals: Int, trim: Bool = false) -> String {
        guard value.isFinite else { return "0" }
        let places = min(max(decimals, 0), 9)
        var scale: Int64 = 1
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * Double(scale)).rounded()
        guard scaled < 9.0e18 else { return "\(value)" }
        let integer = Int64(scaled)
        let whole = String(integer / scale)
        var text = ""
        for (i, digit) in whole.enumerated() {
            if i > 0 && (whole.count - i) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        if places > 0 {
            var fraction = String(integer % scale)
            fraction = String(repeating: "0", count: places - fraction.count) + fraction
            if trim { while fraction.last == "0" { fraction.removeLast() } }
            if !fraction.isEmpty { text += "." + fraction }
        }
        return (value < 0 && integer != 0 ? "-" : "") + text
    }

    /// An SVG coordinate: one decimal, no separators.
    fileprivate static func coord(_ value: Double) -> String {
        let tenths = value.isFinite ? (value * 10).rounded() : 0
        guard abs(tenths) < 1e15 else { return "0" }
        let n = Int64(tenths)
        let sign = n < 0 ? "-" : ""
        return n % 10 == 0 ? "\(n / 10)" : "\(sign)\(abs(n) / 10).\(abs(n) % 10)"
    }
}
