import BacklotBasics
import Foundation
import Testing

@testable import BacklotInfoPlist

/// Inputs found by the property-list fuzz harness (Fuzz/FuzzPropertyList) or of the classes it
/// checks: each used to trap or to run away, and must now be refused with a structured error.
struct PropertyListFuzzRegressionTests {
    /// A binary property list from `objects` (each object's encoded bytes, in reference order).
    static func binaryPlist(
        _ objects: [[UInt8]], refSize: UInt8 = 1, top: UInt64 = 0,
        tableOffset: UInt64? = nil, count: UInt64? = nil
    ) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt64] = []
        for o in objects {
            offsets.append(UInt64(bytes.count))
            bytes += o
        }
        let table = UInt64(bytes.count)
        for o in offsets { bytes += withUnsafeBytes(of: UInt16(o).bigEndian, Array.init) }
        bytes += [0, 0, 0, 0, 0, 0, 2, refSize]
        for v in [count ?? UInt64(objects.count), top, tableOffset ?? table] {
            bytes += withUnsafeBytes(of: v.bigEndian, Array.init)
        }
        return bytes
    }

    static func refusal(_ bytes: [UInt8]) -> BacklotError? {
        do {
            _ = try PropertyListReader.read(bytes, source: "fuzz.plist")
            return nil
        } catch {
            return error as? BacklotError
        }
    }

    /// Fuzz/Findings/FuzzPropertyList/crash-5b21968e…: an element name with bytes that are not
    /// UTF-8 (`<key\xFF\xFF>`) trapped inside Foundation's XMLParser.
    @Test func xmlThatIsNotUTF8IsRefused() {
        let text =
            Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key".utf8) + [
                0xFF, 0xFF,
            ]
            + Array(">BAInitialDownloadRestrictions</key>\n\t<true/>\n</dict>\n</plist>\n".utf8)
        let error = Self.refusal(text)
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("UTF-8") == true)
    }

    /// An 8-byte object reference of 2^63 or more trapped converting it to Int.
    @Test func objectReferenceBeyondIntIsRefused() {
        let array: [UInt8] = [0xA1] + withUnsafeBytes(of: (UInt64(1) << 63).bigEndian, Array.init)
        let error = Self.refusal(Self.binaryPlist([array], refSize: 8))
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("out of range") == true)
    }

    /// An offset-table offset near 2^64 overflowed the check that the table fits in the file.
    @Test func offsetTableOffsetThatOverflowsIsRefused() {
        let error = Self.refusal(Self.binaryPlist([[0x08]], tableOffset: UInt64.max - 3))
        #expect(error?.message.contains("offset table does not fit") == true)
    }

    /// A DAG bomb: 60 arrays of two references each to the next stand for 2^60 values in ~300 bytes.
    @Test func sharedReferencesCannotExpandWithoutBound() {
        var objects = (0..<60).map { i -> [UInt8] in [0xA2, UInt8(i + 1), UInt8(i + 1)] }
        objects.append([0x51, UInt8(ascii: "x")])
        let bomb = Self.binaryPlist(objects)
        #expect(bomb.count < 400)
        let error = Self.refusal(bomb)
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("expand to more than") == true)
    }

    /// A bytes bomb: 2,000 references to one 64 KiB data object are 2,001 values, well within
    /// the count, but each is a copy: 125 MiB from a 66 KB file, refused at 64 MiB. Strings the same.
    @Test func sharedDataCannotExpandWithoutBound() {
        for marker: UInt8 in [0x4F, 0x5F] {
            let array: [UInt8] =
                [0xAF, 0x11] + withUnsafeBytes(of: UInt16(2_000).bigEndian, Array.init)
                + [UInt8](repeating: 1, count: 2_000)
            let data: [UInt8] =
                [marker, 0x12] + withUnsafeBytes(of: UInt32(64 << 10).bigEndian, Array.init)
                + [UInt8](repeating: UInt8(ascii: "A"), count: 64 << 10)
            let bomb = Self.binaryPlist([array, data])
            #expect(bomb.count < 70_000)
            let error = Self.refusal(bomb)
            #expect(error?.code == .invalidInput)
            #expect(error?.message.contains("expand to more than 64 MiB") == true, "\(String(describing: error))")
        }
        // The same object referenced 500 times (31 MiB) is read.
        let array: [UInt8] =
            [0xAF, 0x11] + withUnsafeBytes(of: UInt16(500).bigEndian, Array.init)
            + [UInt8](repeating: 1, count: 500)
        let data: [UInt8] =
            [0x4F, 0x12] + withUnsafeBytes(of: UInt32(64 << 10).bigEndian, Array.init)
            + [UInt8](repeating: 7, count: 64 << 10)
        #expect(Self.refusal(Self.binaryPlist([array, data])) == nil)
    }

    /// Sharing within the limit is still read (uniqued strings are normal in binary plists).
    @Test func sharedReferencesWithinTheLimitAreRead() throws {
        let objects: [[UInt8]] = [[0xA3, 1, 1, 1], [0x51, UInt8(ascii: "x")]]
        #expect(
            try PropertyListReader.read(Self.binaryPlist(objects), source: "ok.plist")
                == .array([.string("x"), .string("x"), .string("x")]))
    }

    /// XML nesting is bounded like binary nesting.
    @Test func deepXMLNestingIsRefused() {
        let depth = PropertyListReader.maximumDepth + 2
        let text =
            "<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth)
            + "</plist>"
        let error = Self.refusal(Array(text.utf8))
        #expect(error?.message.contains("nest more than") == true)
    }

    /// Fuzz/Findings/FuzzPropertyList/crash-7a40b58b…: a processing instruction without data made
    /// Foundation's XMLParser call strlen on a null pointer. The scanner refuses processing
    /// instructions other than the leading XML declaration.
    @Test func processingInstructionsAreRefused() {
        for text in [
            "<?xmunic?>di\n<!", "<plist><?pi data?><true/></plist>",
            "<?xml version=\"1.0\"?><?php x?><plist><true/></plist>",
        ] {
            let error = Self.refusal(Array(text.utf8))
            #expect(error?.code == .invalidInput, "\(text)")
            #expect(error?.message.contains("processing instruction") == true, "\(text)")
        }
    }

    /// Entity declarations (the way to billion-laughs expansion) are refused; the predefined
    /// entities, character references and CDATA are read.
    @Test func entitiesAreLimitedToThePredefinedOnes() throws {
        let bomb =
            "<!DOCTYPE plist [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;&a;\">]><plist><string>&b;</string></plist>"
        #expect(Self.refusal(Array(bomb.utf8))?.message.contains("internal subset") == true)
        #expect(
            Self.refusal(Array("<plist><string>&b;</string></plist>".utf8))?.message.contains("not defined") == true)
        let text =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
            + "<plist version=\"1.0\"><!-- c --><string>&lt;&amp;&gt;&quot;&apos;&#65;&#x1F600;&#0066;<![CDATA[<x>&amp;]]></string></plist>"
        #expect(try PropertyListReader.read(Array(text.utf8), source: "ok.plist") == .string("<&>\"'A😀B<x>&amp;"))
    }

    /// Tags must nest and match, and nothing may follow the root.
    @Test func malformedXMLIsRefused() {
        for text in [
            "<plist><array></plist>", "<plist><true/></plist><plist/>", "<plist><string>x</string>",
            "<plist a=1><true/></plist>",
            "<plist><string>&#0;</string></plist>", "<plist><string>&#xD800;</string></plist>",
            "<plist><string>&lt</string></plist>",
        ] {
            #expect(Self.refusal(Array(text.utf8))?.code == .invalidInput, "\(text)")
        }
    }
}
