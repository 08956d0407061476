//! A catalog verified with another repository's key is refused.

mod common;

use backlot::Status;
use common::TempDir;

#[test]
fn a_catalog_signed_by_another_key_is_refused_as_untrusted() {
    let Some(env) = common::env() else { return };
    let Some(wrong) = common::var("BACKLOT_TEST_WRONG_ROOT_PUB") else { return };
    let dir = TempDir::new("refused");
    let manager = env.config(&dir.container()).trusted_key_path(&wrong).open().expect("open (nothing is read yet)");

    let error = manager.ensure_local_availability(&env.pack, None).unwrap_err();
    assert_eq!(error.status, backlot::sys::BACKLOT_ERR_UNTRUSTED, "{error}");
    assert_eq!(error.kind(), Status::Untrusted);
    assert_eq!(error.name, "BACKLOT_ERR_UNTRUSTED");
    assert!(!error.message.trim().is_empty(), "the refusal says why");
    assert!(error.to_string().starts_with("BACKLOT_ERR_UNTRUSTED: "), "{error}");
    let _: &dyn std::error::Error = &error;

    // Everything that reads the catalog is refused, and nothing was installed.
    assert_eq!(manager.asset_pack(&env.pack).unwrap_err().kind(), Status::Untrusted);
    assert_eq!(manager.all_asset_packs().unwrap_err().kind(), Status::Untrusted);
    assert!(manager.installed_packs().unwrap().is_empty());
    let not_there = manager.contents(&env.file("1.txt"), None).unwrap_err();
    assert!(matches!(not_there.kind(), Status::AssetPackNotFound | Status::FileNotFound), "{not_there}");
}
