//! Compiling one loop for several instruction sets.

/// Defines a public slice function whose body is compiled for AVX-512,
/// AVX2+FMA and the baseline, dispatched at run time.
macro_rules! multiversion {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        pub fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn imp($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn v4($($arg: $ty),*) {
                    imp($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn v3($($arg: $ty),*) {
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
