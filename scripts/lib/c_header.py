#!/usr/bin/env python3
"""The functions a C header declares, one name a line, sorted:

    python3 scripts/lib/c_header.py HEADER [PREFIX]

Comments, preprocessor lines and `static inline` functions (the header's own, not the library's)
are dropped, then each statement (up to a ';') that is not a
typedef, enum or struct and reads `TYPE NAME(` is a declaration of NAME. PREFIX (backlot_) keeps
only names that start with it. scripts/capi-test compares the result with the symbols libbacklot
exports and with include/backlot/symbols.txt.
"""
import re
import sys

if len(sys.argv) not in (2, 3):
    sys.exit("usage: c_header.py HEADER [PREFIX]")
prefix = sys.argv[2] if len(sys.argv) == 3 else "backlot_"
text = open(sys.argv[1], encoding="utf-8").read()
text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
text = re.sub(r"//[^\n]*", "", text)
text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
# Inline functions are the header's own (they call exported ones): no symbol of the library.
text = re.sub(r"static\s+inline\b[^{;]*\{[^}]*\}", "", text)
text = text.replace('extern "C" {', "")
declaration = re.compile(r"^[A-Za-z_][\w\s\*]*?\b(" + re.escape(prefix) + r"\w+)\s*\(")
names = set()
for statement in text.split(";"):
    s = " ".join(statement.split())
    if "}" in s and not s.startswith(("typedef", "enum", "struct")):
        s = s.rsplit("}", 1)[1].strip()  # what follows the end of an enum or struct
    if not s or s.startswith(("typedef", "enum", "struct")):
        continue
    m = declaration.match(s)
    if m:
        names.add(m.group(1))
print("\n".join(sorted(names)))
