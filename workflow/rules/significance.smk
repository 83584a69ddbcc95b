# Stage 8: which differences are real. Per dataset, against BOW (L1/L1) and
# significance.reference, a test that fits the split design (one split: exact McNemar and a
# paired bootstrap interval; random splits: the corrected resampled t-test and its
# interval), Holm-corrected. Across datasets: Wilcoxon signed-rank (Holm) and the Bayesian
# signed-rank test, beside Friedman + Nemenyi, drawn as a critical-difference diagram.
# Code: workflow/wmdeval/analyses/significance.py.


rule collect_predictions:
    input:
        expand(
            "results/{dataset}/{variant}/predictions.parquet",
            dataset=DATASETS,
            variant=VARIANTS,
        ),
    output:
        "results/predictions.parquet",
    log:
        logged("collect_predictions"),
    benchmark:
        benchmarked("collect_predictions")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        expect=EXPECT_SCORES,
    shell:
        "wmdeval collect-predictions --predictions {input} --expect {params.expect:q}"
        " --out {output} 2> {log}"


rule significance:
    input:
        predictions="results/predictions.parquet",
        splits=list(significance_splits().values()),
    output:
        csv=report(
            "results/tables/significance.csv",
            caption="../report/significance.rst",
            category="Significance",
        ),
        datasets_csv="results/tables/significance_datasets.csv",
        md="results/tables/significance.md",
        png=report(
            "results/figures/critical_difference.png",
            caption="../report/critical_difference.rst",
            category="Significance",
        ),
        svg="results/figures/critical_difference.svg",
    log:
        logged("significance"),
    benchmark:
        benchmarked("significance")
    conda:
        "../../envs/wmdeval.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        expect=EXPECT_SCORES,
        splits=significance_split_arguments,
        reference=config["significance"]["reference"],
        alpha=config["significance"]["alpha"],
        bootstrap=config["significance"]["bootstrap"],
        level=config["significance"]["level"],
        rope=config["significance"]["rope"],
        seed=config["significance"]["seed"],
        variant=config["significance"]["variant"],
        classifier=config["significance"]["classifier"],
    shell:
        "wmdeval significance --predictions {input.predictions} --expect {params.expect:q}"
        " {params.splits} --reference {params.reference:q} --alpha {params.alpha}"
        " --bootstrap {params.bootstrap} --level {params.level} --rope {params.rope}"
        " --seed {params.seed} --variant {params.variant} --classifier {params.classifier}"
        " --out-csv {output.csv} --out-datasets-csv {output.datasets_csv}"
        " --out-md {output.md} --out-png {output.png} --out-svg {output.svg} 2> {log}"
