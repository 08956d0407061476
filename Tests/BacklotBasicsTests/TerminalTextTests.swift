import BacklotBasics
import Testing

/// Names from outside are shown on a terminal as `ls -b` and `git` show them: plain when they are
/// plain, quoted with every control, invisible and bidirectional character escaped otherwise.
@Suite struct TerminalTextTests {
    @Test(arguments: ["level1/a.txt", "Chapitre 1 — été.txt", "音声/台词.ogg", "emoji 👍🏽 ok", "heart ❤️"])
    func aPlainNameIsShownAsItIs(name: String) {
        #expect(TerminalText.quoted(name) == name)
        #expect(TerminalText.sanitized("  \(name)\n") == "  \(name)\n")
    }

    @Test func controlsAreEscapedVisibly() {
        #expect(TerminalText.quoted("a\u{1B}]0;owned\u{07}b") == #""a\x1B]0;owned\x07b""#)
        #expect(TerminalText.quoted("line\nfake: OK") == #""line\nfake: OK""#)
        #expect(TerminalText.quoted("cr\rover\u{08}\u{7F}") == #""cr\rover\x08\x7F""#)
        #expect(TerminalText.quoted("c1 \u{9B}31m") == #""c1 \u{009B}31m""#)
        #expect(TerminalText.quoted("tab\there") == #""tab\there""#)
        #expect(TerminalText.quoted(#"q"uote\back"#) == #""q\"uote\\back""#)
    }

    @Test(arguments: [
        ("invoice\u{202E}fdp.exe", #""invoice\u{202E}fdp.exe""#),
        ("a\u{2066}b\u{2069}", #""a\u{2066}b\u{2069}""#),
        ("rlm\u{200F}", #""rlm\u{200F}""#),
        ("zw\u{200B}sp", #""zw\u{200B}sp""#),
        ("joi\u{200D}ner", #""joi\u{200D}ner""#),
        ("bom\u{FEFF}", #""bom\u{FEFF}""#),
        ("soft\u{00AD}hyphen", #""soft\u{00AD}hyphen""#),
        ("nbsp\u{00A0}x", #""nbsp\u{00A0}x""#),
        ("ideo\u{3000}space", #""ideo\u{3000}space""#),
        ("sep\u{2028}x", #""sep\u{2028}x""#),
        ("filler\u{3164}", #""filler\u{3164}""#),
        ("tag\u{E0041}", #""tag\u{E0041}""#),
        ("cgj\u{034F}", #""cgj\u{034F}""#),
    ])
    func invisibleAndBidirectionalCharactersAreEscaped(name: String, shown: String) {
        #expect(TerminalText.quoted(name) == shown)
    }

    @Test func bytesThatAreNotUTF8AreShownAsHex() {
        #expect(
            TerminalText.quoted(bytes: Array("a".utf8) + [0xFF, 0xC3] + Array("b\u{1B}".utf8)) == #""a\xFF\xC3b\x1B""#)
        #expect(TerminalText.quoted(bytes: Array("plain".utf8)) == "plain")
    }

    @Test func sanitizedKeepsTheLayoutAndEscapesTheRest() {
        #expect(TerminalText.sanitized("a\tb\n  \u{1B}[2J\u{202E}x\n") == "a\tb\n  \\x1B[2J\\u{202E}x\n")
    }
}
