import CPNG
import CQRencode
import CZbar
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// QR codes for Ya OK contact cards: made by libqrencode, drawn in a terminal
/// with half-block characters or written as a PNG (libpng), and read back from
/// a picture by libzbar. All three are Debian's C libraries.
public struct QRCode: Hashable, Sendable {
    /// Modules on a side (21 for version 1 … 177 for version 40).
    public let size: Int
    /// Row-major, true = dark.
    public let modules: [Bool]

    public enum Correction: Sendable {
        case low, medium, quartile, high
        var level: QRecLevel {
            switch self {
            case .low: QR_ECLEVEL_L
            case .medium: QR_ECLEVEL_M
            case .quartile: QR_ECLEVEL_Q
            case .high: QR_ECLEVEL_H
            }
        }
    }

    public enum Error: Swift.Error, Hashable, Sendable, CustomStringConvertible {
        case encodingFailed(String)
        case png(String)
        case noCode(String)

        public var description: String {
            switch self {
            case let .encodingFailed(why): "could not make a QR code: \(why)"
            case let .png(why): "PNG: \(why)"
            case let .noCode(path): "no QR code found in \(path)"
            }
        }
    }

    public init(size: Int, modules: [Bool]) {
        precondition(modules.count == size * size)
        self.size = size
        self.modules = modules
    }

    /// Encodes `text` (8-bit mode, case kept) at the smallest version that fits.
    public init(text: String, correction: Correction = .medium) throws(Error) {
        guard let code = QRcode_encodeString(text, 0, correction.level, QR_MODE_8, 1) else {
            throw Error.encodingFailed(String(cString: strerror(errno)))
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        self.init(size: width, modules: data.map { $0 & 1 == 1 })
    }

    public func isDark(x: Int, y: Int) -> Bool {
        x >= 0 && y >= 0 && x < size && y < size && modules[y * size + x]
    }

    /// The code with a quiet zone of `border` modules, two module rows per
    /// line of text (▀ ▄ █ and space). On a dark terminal the light modules
    /// are drawn (`darkTerminal`), as `qrencode -t UTF8` does, so that the
    /// picture is dark-on-light for a camera.
    public func terminalText(border: Int = 2, darkTerminal: Bool = true) -> String {
        let side = size + 2 * border
        func ink(_ x: Int, _ y: Int) -> Bool {
            let dark = isDark(x: x - border, y: y - border)
            return darkTerminal ? !dark : dark
        }
        var lines = [String]()
        for y in stride(from: 0, to: side, by: 2) {
            var line = ""
            for x in 0..<side {
                let top = ink(x, y), bottom = y + 1 < side ? ink(x, y + 1) : darkTerminal
                line += top ? (bottom ? "█" : "▀") : (bottom ? "▄" : " ")
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// Grey pixels (0 dark, 255 light), `scale` pixels a module, a quiet zone
    /// of `border` modules.
    public func pixels(scale: Int = 8, border: Int = 4) -> (width: Int, pixels: [UInt8]) {
        let width = (size + 2 * border) * scale
        var out = [UInt8](repeating: 255, count: width * width)
        for y in 0..<size {
            for x in 0..<size where modules[y * size + x] {
                for dy in 0..<scale {
                    let row = ((y + border) * scale + dy) * width + (x + border) * scale
                    for dx in 0..<scale { out[row + dx] = 0 }
                }
            }
        }
        return (width, out)
    }

    /// Writes the code as an 8-bit greyscale PNG.
    public func writePNG(to path: String, scale: Int = 8, border: Int = 4) throws(Error) {
        let (width, pixels) = pixels(scale: scale, border: border)
        try PNGFile.writeGray(path: path, width: width, height: width, pixels: pixels)
    }

    /// Every QR code libzbar finds in a greyscale picture, as text.
    public static func scan(gray pixels: [UInt8], width: Int, height: Int) -> [String] {
        guard width > 0, height > 0, pixels.count == width * height,
              let scanner = zbar_image_scanner_create() else { return [] }
        defer { zbar_image_scanner_destroy(scanner) }
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        guard let image = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(image) }
        let y800 = UInt(UInt8(ascii: "Y")) | UInt(UInt8(ascii: "8")) << 8 | UInt(UInt8(ascii: "0")) << 16
            | UInt(UInt8(ascii: "0")) << 24
        zbar_image_set_format(image, y800)
        zbar_image_set_size(image, UInt32(width), UInt32(height))
        return pixels.withUnsafeBytes { raw -> [String] in
            zbar_image_set_data(image, raw.baseAddress, UInt(raw.count), nil)
            guard zbar_scan_image(scanner, image) > 0 else { return [] }
            var found = [String]()
            var symbol = zbar_image_first_symbol(image)
            while let s = symbol {
                if zbar_symbol_get_type(s) == ZBAR_QRCODE, let data = zbar_symbol_get_data(s) {
                    let count = Int(zbar_symbol_get_data_length(s))
                    found.append(String(decoding: UnsafeRawBufferPointer(start: data, count: count), as: UTF8.self))
                }
                symbol = zbar_symbol_next(s)
            }
            zbar_image_set_data(image, nil, 0, nil)
            return found
        }
    }

    /// Every QR code in a PNG picture held in memory (an upload); none found is an error.
    public static func scan(png bytes: [UInt8]) throws(Error) -> [String] {
        let (width, height, pixels) = try PNGFile.readGray(bytes: bytes)
        let found = scan(gray: pixels, width: width, height: height)
        guard !found.isEmpty else { throw Error.noCode("the picture") }
        return found
    }

    /// Every QR code in a PNG file (any colour type; read as grey).
    public static func scan(pngAt path: String) throws(Error) -> [String] {
        let (width, height, pixels) = try PNGFile.readGray(path: path)
        let found = scan(gray: pixels, width: width, height: height)
        guard !found.isEmpty else { throw Error.noCode(path) }
        return found
    }
}

/// libpng's simplified API, for greyscale pictures.
enum PNGFile {
    /// Refuse pictures larger than this (a camera picture is far smaller).
    static let maxPixels = 64 * 1024 * 1024

    static func writeGray(path: String, width: Int, height: Int, pixels: [UInt8]) throws(QRCode.Error) {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(width)
        image.height = UInt32(height)
        image.format = UInt32(PNG_FORMAT_GRAY)
        let ok = pixels.withUnsafeBytes { png_image_write_to_file(&image, path, 0, $0.baseAddress, 0, nil) }
        guard ok != 0 else { throw .png(message(&image)) }
    }

    static func readGray(path: String) throws(QRCode.Error) -> (Int, Int, [UInt8]) {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        guard png_image_begin_read_from_file(&image, path) != 0 else { throw .png("\(path): \(message(&image))") }
        let width = Int(image.width), height = Int(image.height)
        guard width > 0, height > 0, width * height <= maxPixels else {
            png_image_free(&image)
            throw .png("\(path): \(width)×\(height) pixels is more than this reader takes")
        }
        image.format = UInt32(PNG_FORMAT_GRAY)
        var pixels = [UInt8](repeating: 0, count: width * height)
        let ok = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
        guard ok != 0 else { throw .png("\(path): \(message(&image))") }
        return (width, height, pixels)
    }

    static func readGray(bytes: [UInt8]) throws(QRCode.Error) -> (Int, Int, [UInt8]) {
        // Begun and finished within one borrow of the bytes (libpng keeps the pointer in between).
        let result = bytes.withUnsafeBytes { raw -> Result<(Int, Int, [UInt8]), QRCode.Error> in
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            guard png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count) != 0 else {
                return .failure(.png("the picture: \(message(&image))"))
            }
            let width = Int(image.width), height = Int(image.height)
            guard width > 0, height > 0, width * height <= maxPixels else {
                png_image_free(&image)
                return .failure(.png("the picture: \(width)×\(height) pixels is more than this reader takes"))
            }
            image.format = UInt32(PNG_FORMAT_GRAY)
            var pixels = [UInt8](repeating: 0, count: width * height)
            let ok = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
            guard ok != 0 else { return .failure(.png("the picture: \(message(&image))")) }
            return .success((width, height, pixels))
        }
        return try result.get()
    }

    private static func message(_ image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
