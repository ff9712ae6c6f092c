import Foundation
import StarlingTestSupport
import Testing

/// A small filesystem of the test's own (tmpfs, mounted as root: CI runs as
/// root), to fill up and free again. ``remove()`` unmounts it.
struct SmallDisk {
    let path: String
    private var filler: String { path + "/filler" }

    init(megabytes: Int) async throws {
        try #require(getuid() == 0, "mounting a small filesystem needs root (CI runs as root)")
        path = ContactCommandTests.temporaryDirectory("small-disk")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let mounted = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/bin/mount"),
                                                    ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
        try #require(mounted.status == 0, "mount: \(mounted.stderr)")
    }

    /// Fills what is left of it.
    func fill() async throws {
        let dd = try await StarlingProcess.run(executable: URL(fileURLWithPath: "/bin/dd"), ["if=/dev/zero", "of=\(filler)", "bs=16k"])
        #expect(dd.stderr.contains("No space left"), "the disk was not filled: \(dd.stderr)")
    }

    /// Frees what ``fill()`` took.
    func free() throws { try FileManager.default.removeItem(atPath: filler) }

    func remove() {
        let umount = Process()
        umount.executableURL = URL(fileURLWithPath: "/bin/umount")
        umount.arguments = ["-l", path]
        if (try? umount.run()) != nil { umount.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: path)
    }
}
