//! What the integration tests share: an engine built in a heap buffer of
//! exactly the size it asks for, and two CPUs running one address space.
//! (A directory module, so cargo does not take it for a test of its own.)
#![allow(dead_code, unused_macros)]

use tlbpol::{Config, Engine, Host};

/// A zeroed buffer of `Engine::mem_size(cfg)` bytes for an engine driving
/// a host of `host`'s type.
pub fn buffer_for<H: Host>(_host: &H, cfg: &Config<'_>) -> Vec<u8> {
    vec![0u8; Engine::<H>::mem_size(cfg)]
}

/// `engine!(eng = &cfg, &host)`: `let eng`, an engine of `cfg` driving
/// `host`, in a buffer that lives until the end of the caller's block.
macro_rules! engine {
    ($eng:ident = $cfg:expr, $host:expr) => {
        let cfg = $cfg;
        let mut mem = $crate::common::buffer_for($host, cfg);
        let $eng = Engine::init(cfg, $host, &mut mem).unwrap();
    };
}

/// `two_cpus!(eng, space = tag, c0, c1)`: `let space`, the address space
/// `tag` opened in `eng`, and `let mut c0, c1`, the tokens of CPUs 0 and
/// 1, both switched to it.
macro_rules! two_cpus {
    ($eng:ident, $space:ident = $tag:expr, $c0:ident, $c1:ident) => {
        let $space = $eng.open_as($tag).unwrap();
        let mut cpus = $eng.take_cpus().unwrap();
        let (mut $c0, mut $c1) = (cpus.next().unwrap(), cpus.next().unwrap());
        $c0.switch(Some(&$space)).unwrap();
        $c1.switch(Some(&$space)).unwrap();
    };
}

/// `one_cpu!(eng, space = tag, cpu = n)`: `let space`, the address space
/// `tag` opened in `eng`, and `let mut cpu`, the token of CPU `n`,
/// switched to it.
macro_rules! one_cpu {
    ($eng:ident, $space:ident = $tag:expr, $cpu:ident = $n:expr) => {
        let $space = $eng.open_as($tag).unwrap();
        let mut $cpu = $eng.take_cpus().unwrap().nth($n).unwrap();
        $cpu.switch(Some(&$space)).unwrap();
    };
}
