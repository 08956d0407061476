import Foundation

/// A node read through `Codable`: a value of any shape inside JSON a machine sent (an app's
/// `userInfo`, the details of an audit entry). Whole numbers keep their digits (as `Int64` or
/// `UInt64`), others their value (through `Decimal`); objects keep their members, in the order
/// the decoder gives them.
///
/// ```swift
/// struct Entry: Decodable { let details: JSONNode }
/// let entry = try JSONDecoder().decode(Entry.self, from: data)
/// ```
extension JSONNode: Decodable {
    public init(from decoder: any Decoder) throws {
        if let c = try? decoder.singleValueContainer() {
            if c.decodeNil() {
                self.init(.null)
                return
            }
            if let b = try? c.decode(Bool.self) {
                self.init(.bool(b))
                return
            }
            if let n = try? c.decode(Int64.self) {
                self.init(.number(String(n)))
                return
            }
            if let n = try? c.decode(UInt64.self) {
                self.init(.number(String(n)))
                return
            }
            if let d = try? c.decode(Decimal.self), d.isFinite {
                self.init(.number(d.description))
                return
            }
            if let s = try? c.decode(String.self) {
                self.init(.string(s))
                return
            }
        }
        if var c = try? decoder.unkeyedContainer() {
            var elements: [JSONNode] = []
            while !c.isAtEnd { elements.append(try c.decode(JSONNode.self)) }
            self.init(.array(elements))
            return
        }
        let c = try decoder.container(keyedBy: Key.self)
        self.init(
            .object(
                try c.allKeys.map { JSONMember(key: $0.stringValue, value: try c.decode(JSONNode.self, forKey: $0)) }))
    }
}
