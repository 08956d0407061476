#!/usr/bin/env python3
"""Writes the Info.plist fixtures, each in XML and binary form, with Python's plistlib
(an implementation independent of Backlot's reader). Run from this folder; outputs are committed."""
import plistlib

GROUP = "group.com.example.game"
RESTRICTIONS = {"BADownloadAllowance": 9300000000, "BAEssentialDownloadAllowance": 0,
                "BADownloadDomainAllowList": ["cdn.example.com", "*.example.net"]}
SELF = {"BAAppGroupID": GROUP, "BAHasManagedAssetPacks": True, "BAUsesAppleHosting": False,
        "BAManifestURL": "https://cdn.example.com/manifest.json", "BAMaxInstallSize": 23000000000,
        "BAEssentialMaxInstallSize": 0, "BAInitialDownloadRestrictions": RESTRICTIONS,
        "CFBundleIdentifier": "com.example.game"}

def variant(**changes):
    d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in SELF.items()}
    for k, v in changes.items():
        if "." in k:
            outer, inner = k.split(".")
            if v is None: d[outer].pop(inner, None)
            else: d[outer][inner] = v
        elif v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return d

FIXTURES = {
    "valid-self-hosted": SELF,
    "valid-apple-hosted": {"BAAppGroupID": GROUP, "BAHasManagedAssetPacks": True, "BAUsesAppleHosting": True},
    "manifest-http": variant(BAManifestURL="http://localhost:8787/download-manifest.json"),
    "manifest-missing": variant(BAManifestURL=None),
    "manifest-not-url": variant(BAManifestURL="cdn.example.com/manifest.json"),
    "restrictions-missing": variant(BAInitialDownloadRestrictions=None),
    "allowance-missing": variant(**{"BAInitialDownloadRestrictions.BAEssentialDownloadAllowance": None}),
    "allowance-negative": variant(**{"BAInitialDownloadRestrictions.BADownloadAllowance": -1}),
    "allowance-string": variant(**{"BAInitialDownloadRestrictions.BADownloadAllowance": "1000"}),
    "max-install-negative": variant(BAMaxInstallSize=-5),
    "allowlist-bad-domain": variant(**{"BAInitialDownloadRestrictions.BADownloadDomainAllowList": ["https://cdn.example.com/", "cdn..example.com", "*.ok.example.com"]}),
    "group-missing": {k: v for k, v in variant(BAAppGroupID=None).items()} | {"AppGroupIdentifier": GROUP},
    "apple-hosting-mixed": {"BAAppGroupID": GROUP, "BAHasManagedAssetPacks": True, "BAUsesAppleHosting": True,
                            "BAManifestURL": "https://cdn.example.com/manifest.json", "BAInitialDownloadRestrictions": RESTRICTIONS},
    "group-placeholder": variant(BAAppGroupID="$(APP_GROUP_IDENTIFIER)"),
    "manifest-placeholder-http": variant(BAManifestURL="$(ASSET_SCHEME)://cdn.example.com/manifest.json"),
}

for name, value in FIXTURES.items():
    with open(f"{name}.xml.plist", "wb") as f:
        plistlib.dump(value, f, fmt=plistlib.FMT_XML)
    with open(f"{name}.binary.plist", "wb") as f:
        plistlib.dump(value, f, fmt=plistlib.FMT_BINARY)
print(f"wrote {len(FIXTURES) * 2} fixtures")
