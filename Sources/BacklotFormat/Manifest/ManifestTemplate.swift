/// The manifest template `backlot template` writes: Apple's `ba-package template` text (tabs,
/// `//` comments, bracketed placeholders), plus comments on the keys ba-package 2.0 and Backlot add.
public enum ManifestTemplate {
    /// The template text. Replace each `[…]` placeholder, remove what you do not need, and package it.
    public static let text = """
        {
        \t"assetPackID": "[Asset-Pack ID]", // Letters, digits and '-' work everywhere; '.' and '_' work when self-hosting only.
        \t"downloadPolicy": {
        \t\t"essential": { // Possible keys: “essential”, “prefetch”, or “onDemand”
        \t\t\t// Essential and prefetch download policies require a list of installation event types. For an on-demand download policy, the value for the “onDemand” key must be an empty object.
        \t\t\t"installationEventTypes": [
        \t\t\t\t// Remove undesired elements from this array.
        \t\t\t\t"firstInstallation",
        \t\t\t\t"subsequentUpdate"
        \t\t\t]
        \t\t}
        \t},
        \t"fileSelectors": [
        \t\t// You can add as many file and/or directory selectors as you want. Paths are relative to the source root.
        \t\t// Also: {"filePattern": "Audio/*.wav"} (a glob; * stays within a folder, ** spans folders),
        \t\t// {"fileExclusion": "Textures/draft.png"} (removes what other selectors chose, matched on source paths),
        \t\t// {"fileSource": "build/a.png", "fileDestination": "Textures/a.png"} (one file, renamed),
        \t\t// {"directorySource": "raw", "directoryDestination": "Textures"} (a folder, renamed).
        \t\t{
        \t\t\t"file": "[Path to File]"
        \t\t},
        \t\t{
        \t\t\t"directory": "[Path to Directory]"
        \t\t}
        \t],
        \t"platforms": [
        \t\t// Remove undesired elements from this array.
        \t\t"iOS",
        \t\t"macOS",
        \t\t"tvOS",
        \t\t"visionOS",
        \t\t"linux"
        \t]
        \t// Optional keys: "sourceRoot": "." (where paths start, relative to this file),
        \t// "language": "en-US" (a BCP-47 tag), "userInfo": { } (any JSON, handed to the app as is).
        }

        """
}
