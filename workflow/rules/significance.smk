# Stage 8: which differences are real. Exact McNemar tests on the test predictions pooled
# over folds (Holm-corrected) and paired bootstrap intervals per dataset, against BOW
# (L1/L1) and significance.reference; Friedman + Nemenyi across datasets, drawn as a
# critical-difference diagram. Code: workflow/wmdeval/analyses/significance.py.


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
        "results/predictions.parquet",
    output:
        csv=report(
            "results/tables/significance.csv",
            caption="../report/significance.rst",
            category="Significance",
        ),
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
        reference=config["significance"]["reference"],
        alpha=config["significance"]["alpha"],
        bootstrap=config["significance"]["bootstrap"],
        level=config["significance"]["level"],
        seed=config["significance"]["seed"],
        variant=config["significance"]["variant"],
        classifier=config["significance"]["classifier"],
    shell:
        "wmdeval significance --predictions {input} --expect {params.expect:q}"
        " --reference {params.reference:q} --alpha {params.alpha}"
        " --bootstrap {params.bootstrap} --level {params.level} --seed {params.seed}"
        " --variant {params.variant} --classifier {params.classifier}"
        " --out-csv {output.csv} --out-md {output.md} --out-png {output.png}"
        " --out-svg {output.svg} 2> {log}"
