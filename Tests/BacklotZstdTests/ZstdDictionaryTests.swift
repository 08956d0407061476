import BacklotBasics
import BacklotTestSupport
import BacklotZstd
import Dispatch
import Synchronization
import Testing

/// Dictionaries: trained deterministically, smaller frames for small texts, and a frame made
/// against one is never decoded into its content without it.
@Suite struct ZstdDictionaryTests {
    func samples(seed: UInt64, count: Int = 600) -> [[UInt8]] {
        var g = SeededGenerator(seed: seed)
        return (0..<count).map { _ in g.text(500 + Int(g.next() % 3000)) }
    }

    @Test func aTrainedDictionaryIsDeterministicAndMakesSmallTextsSmaller() throws {
        print("ZstdDictionaryTests seed 43")
        let texts = samples(seed: 43)
        let one = try #require(ZstdDictionary.train(samples: texts, capacity: 16 << 10))
        let two = try #require(ZstdDictionary.train(samples: texts, capacity: 16 << 10))
        #expect(one.bytes == two.bytes && one.id == two.id && one.id != 0)
        #expect(one.bytes.count <= 16 << 10)
        #expect(try ZstdDictionary(bytes: one.bytes) == one)

        let alone = ZstdCompressor(level: 3)
        let against = ZstdCompressor(level: 3, dictionary: one)
        let d = ZstdDecompressor()
        var plain = 0
        var with = 0
        for text in samples(seed: 44, count: 50) {
            let frame = try against.compress(text)
            plain += try alone.compress(text).count
            with += frame.count
            #expect(try d.decompress(frame, expectedSize: text.count, dictionary: one) == text)
        }
        #expect(with * 10 < plain * 9, "dictionary frames \(with) bytes, alone \(plain): not 10 % smaller")
        // A frame made without the dictionary decodes the same with it.
        let text = texts[0]
        #expect(try d.decompress(try alone.compress(text), expectedSize: text.count, dictionary: one) == text)
    }

    /// One dictionary shared by threads (what `@unchecked Sendable` claims): each compresses at
    /// several levels at once, so that the encoding tables of a level are made while others use
    /// theirs, and decompresses; every frame is the one a single thread makes, and decodes back.
    @Test func oneDictionaryIsSharedByThreadsAtOnce() throws {
        print("ZstdDictionaryTests seed 45")
        let texts = samples(seed: 45, count: 300)
        let dictionary = try #require(ZstdDictionary.train(samples: texts, capacity: 16 << 10))
        let levels: [Int32] = [1, 3, 6, 9]
        let inputs = samples(seed: 46, count: 40)
        let reference = try levels.map { level in
            try inputs.map {
                try ZstdCompressor(level: level, dictionary: ZstdDictionary(bytes: dictionary.bytes)).compress($0)
            }
        }
        let mismatches = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 16) { worker in
            let level = levels[worker % levels.count]
            let compressor = ZstdCompressor(level: level, dictionary: dictionary)
            let decompressor = ZstdDecompressor()
            for (i, text) in inputs.enumerated() {
                guard let frame = try? compressor.compress(text), frame == reference[worker % levels.count][i],
                    (try? decompressor.decompress(frame, expectedSize: text.count, dictionary: dictionary)) == text
                else {
                    mismatches.add(1, ordering: .relaxed)
                    continue
                }
            }
        }
        #expect(mismatches.load(ordering: .relaxed) == 0)
    }

    @Test func aDictionaryFrameWithoutItsDictionaryNeverGivesItsContent() throws {
        let texts = samples(seed: 45)
        let right = try #require(ZstdDictionary.train(samples: texts, capacity: 16 << 10))
        let wrong = try #require(ZstdDictionary.train(samples: samples(seed: 46), capacity: 8 << 10))
        let text = texts[1]
        let frame = try ZstdCompressor(level: 3, dictionary: right).compress(text)
        let d = ZstdDecompressor()
        for dictionary in [nil, wrong] {
            if let out = try? d.decompress(frame, expectedSize: text.count, dictionary: dictionary) {
                #expect(out != text)
            }
        }
        // The context still works after a refusal.
        #expect(try d.decompress(frame, expectedSize: text.count, dictionary: right) == text)
    }

    @Test func bytesThatAreNotADictionaryAreRefused() throws {
        let real = try #require(ZstdDictionary.train(samples: samples(seed: 47), capacity: 8 << 10))
        var noID = real.bytes
        noID.replaceSubrange(4..<8, with: [0, 0, 0, 0])
        var badTables = real.bytes
        for i in 8..<min(200, badTables.count) { badTables[i] = 0xFF }
        for (bytes, phrase) in [
            ([UInt8](), "not a zstd dictionary"), (Array("hello, world".utf8), "not a zstd dictionary"),
            (noID, "no ID"), (badTables, "cannot read the dictionary"),
        ] {
            #expect {
                _ = try ZstdDictionary(bytes: bytes)
            } throws: { error in
                let e = error as? BacklotError
                return e?.code == .corruptArchive && (e?.message.contains(phrase) ?? false)
            }
        }
    }

    @Test func tooLittleToLearnFromGivesNoDictionary() {
        #expect(ZstdDictionary.train(samples: [], capacity: 16 << 10) == nil)
        #expect(ZstdDictionary.train(samples: [Array("a".utf8)], capacity: 16 << 10) == nil)
    }
}
