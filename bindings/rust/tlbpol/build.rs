//! Sets the rpath of this crate's tests and examples to the directory of the
//! shared library tlbpol-sys linked (DEP_TLBPOL_LIBDIR), so that they run
//! from the build tree without LD_LIBRARY_PATH.  (A dependency's
//! cargo:rustc-link-arg does not reach its dependents' executables.)
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TLBPOL_LIBDIR");
    if let Ok(dirs) = std::env::var("DEP_TLBPOL_LIBDIR") {
        for d in dirs.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", d);
        }
    }
}
