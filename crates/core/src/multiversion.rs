//! Compiling one loop for several instruction sets.

/// Defines a slice function whose body is compiled for AVX-512, AVX2+FMA
/// and the baseline, dispatched at run time.
///
/// Exported for the other crates' hand-written numerics (hidden from the
/// docs: not part of the library's interface). Rust never contracts a
/// multiply and an add into an FMA, so a body's results are the same bits
/// in every version.
#[doc(hidden)]
#[macro_export]
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn imp($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn v4($($arg: $ty),*) $(-> $ret)? {
                    imp($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3($($arg: $ty),*) $(-> $ret)? {
                    imp($($arg),*)
                }
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports the features v4 is compiled for.
                    return unsafe { v4($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports the features v3 is compiled for.
                    return unsafe { v3($($arg),*) };
                }
            }
            imp($($arg),*)
        }
    };
}
