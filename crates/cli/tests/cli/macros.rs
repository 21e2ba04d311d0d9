/// Defines a test that gets a fresh temporary directory.
///
/// ```text
/// kapprox_test!(name, |dir| { dir.cmd(&["convert", ...]).stdout(); });
/// kapprox_test!(#[ignore = "slow: ..."] name, |dir| { ... });
/// ```
///
/// The directory is named after the test (handy when one is kept with
/// `KAPPROX_TEST_KEEP=1`) and removed when the test ends.
macro_rules! kapprox_test {
    ($(#[$attr:meta])* $name:ident, |$dir:ident| $body:block) => {
        $(#[$attr])*
        #[test]
        fn $name() {
            #[allow(unused_variables)]
            let $dir = $crate::util::Dir::new(stringify!($name));
            $body
        }
    };
}
