use super::*;

/// The JSON that part files of earlier versions hold for each family
/// (written by the former `Method` type) reads back, and writes out again
/// unchanged.
#[test]
fn recorded_methods_round_trip_unchanged() {
    let recorded = [
        r#"{"method":"independent","kind":"rff","kernel":"gaussian","form":null,"n_components":16,"grids":null,"inner":null}"#,
        r#"{"method":"independent","kind":"binning","kernel":"laplacian","form":null,"n_components":64,"grids":8,"inner":null}"#,
        r#"{"method":"independent","kind":"comp","kernel":{"matern":{"nu":1.5}},"form":"phase","n_components":32,"grids":null,"inner":128}"#,
        r#"{"method":"nystrom","kernel":"cauchy","n_landmarks":50,"rel_tol":1e-10}"#,
        r#"{"method":"tefm","sketch":"count-sketch","base":"nystrom","kernel":"gaussian","form":null,"n_components":8,"sketch_features":32,"power":1,"strategy":"one-pass"}"#,
        r#"{"method":"tefm","sketch":"srht","base":"fastfood","kernel":"gaussian","form":"pairs","n_components":8,"sketch_features":32,"power":0,"strategy":"multi-pass"}"#,
        r#"{"method":"eof","kernel":"laplace","size":{"budget":100},"basis":"paper","subset":"uniform"}"#,
    ];
    for text in recorded {
        let m: MethodSpec = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
    }
    // An EOF method recorded before `basis` existed used the boundary basis.
    let old: MethodSpec = serde_json::from_str(r#"{"method":"eof","kernel":"laplace","size":{"level":3}}"#).unwrap();
    assert!(matches!(old, MethodSpec::Eof { basis: EofBasis::Boundary, subset: EofSubset::Nested, .. }));
}

#[test]
fn names_parse_and_display() {
    for (name, shown) in [
        ("rff", "rff"),
        ("rff-gaussian", "rff"),
        ("Fastfood", "fastfood"),
        ("nystroem", "nystrom"),
        ("tefm", "tefm-g"),
        ("tefm-c", "tefm-c"),
        ("eof", "eof"),
        ("exact", "exact"),
    ] {
        let m: MethodSpec = name.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.to_string(), shown);
    }
    let e = "nope".parse::<MethodSpec>().unwrap_err().to_string();
    assert!(e.contains("unknown feature map \"nope\""), "{e}");
}

#[test]
fn defaults_are_the_command_lines() {
    let MethodSpec::Tefm { base, n_components, sketch_features, power, kernel, .. } = "tefm-s".parse().unwrap() else {
        panic!("not TEFM")
    };
    assert_eq!((base, n_components, sketch_features, power), (TefmBase::Map(MapKind::Rff), 1024, 4096, 1));
    assert_eq!(kernel, KernelFamily::Gaussian);
    assert!(matches!(
        "eof".parse().unwrap(),
        MethodSpec::Eof { kernel: EofKernel::Laplace, size: EofSize::Budget(1024), .. }
    ));
}

#[test]
fn inapplicable_or_invalid_parameters_name_their_flag() {
    let check = |p: MethodParams| p.check(1, None).unwrap_err().to_string();
    let with = |f: &dyn Fn(&mut MethodParams)| {
        let mut p = MethodParams::default();
        f(&mut p);
        p
    };
    assert_eq!(check(with(&|p| p.level = Some(3))), "--level applies to eof, not to --map rff");
    assert_eq!(check(with(&|p| p.n_components = 0)), "--features: must be at least 1");
    assert_eq!(check(with(&|p| p.form = Some("cos".into()))), "--form: \"cos\" is not pairs or phase");
    assert!(check(with(&|p| p.kernel = "poly".into())).starts_with("--kernel: unknown kernel \"poly\""));
    let tefm = |f: &dyn Fn(&mut MethodParams)| {
        with(&|p| {
            p.map = "tefm-g".into();
            p.n_components = 64;
            f(p)
        })
    };
    assert!(check(tefm(&|p| p.sketch_features = Some(32))).starts_with("--sketch-features: 32 is smaller"));
    assert_eq!(check(tefm(&|p| p.base = "binning".into())), "--base: TEFM needs a dense base map, not binning");
    assert!(check(with(&|p| p.sketch_features = Some(32))).starts_with("--sketch-features applies to tefm-g"));
    let eof = |kernel: &str| with(&|p| (p.map, p.kernel) = ("eof".into(), kernel.into()));
    assert_eq!(check(eof("cauchy")), "--kernel: eof supports laplacian and sobolev, not \"cauchy\"");
    assert!(matches!(eof("sobolev").check(1, None).unwrap(), MethodSpec::Eof { kernel: EofKernel::Sobolev, .. }));
    let exact = with(&|p| p.map = "exact".into());
    assert!(check(exact.clone()).contains("unknown feature map \"exact\""));
    assert!(exact.check_exact().unwrap().is_exact());
}

#[test]
fn tefm_auto_strategy_follows_the_memory_budget() {
    let p = MethodParams { map: "tefm-g".into(), n_components: 2048, ..MethodParams::default() };
    let strategy = |budget| match p.check(1, Some(budget)).unwrap() {
        MethodSpec::Tefm { strategy, .. } => strategy,
        _ => unreachable!(),
    };
    // d = 8192: FᵀF alone is 512 MiB.
    assert_eq!(strategy(64 << 20), Strategy::MultiPass);
    assert_eq!(strategy(64 << 30), Strategy::OnePass);
}
