"""The run's configuration read from its log: one short snippet per shape a trainer prints it in."""

from __future__ import annotations

from trainwatch import runconfig


def facts(text: str) -> dict[str, object]:
    return {name: f.value for name, f in runconfig.read(text).facts.items()}


def test_hf_training_arguments_dump_one_key_a_line() -> None:
    text = "\n".join(["TrainingArguments(", "bf16=True,", "gradient_accumulation_steps=16,",
                      "gradient_checkpointing=True,", "learning_rate=7e-05,", "max_grad_norm=1.0,",
                      "optim=adamw_torch,", "per_device_train_batch_size=1,", "warmup_ratio=0.0,",
                      "warmup_steps=30,", ")"])
    cfg = runconfig.read(text)
    got = {n: f.value for n, f in cfg.facts.items()}
    assert got["micro_batch"] == 1 and got["grad_accum"] == 16 and got["lr"] == 7e-05
    assert got["grad_checkpointing"] is True and got["max_grad_norm"] == 1.0 and got["optimizer"] == "adamw_torch"
    assert cfg.precision == "bf16"
    assert got["warmup"] == 30 and cfg.key("warmup") == "warmup_steps"  # the ratio of 0 is the unused one
    assert cfg.facts["micro_batch"].where == "TrainingArguments"


def test_argparse_namespace_on_one_line() -> None:
    cfg = runconfig.read("Namespace(lr=0.0001, lr_backbone=1e-05, batch_size=2, clip_max_norm=0.1, aux_loss=True)")
    assert cfg.get("lr") == 0.0001 and cfg.key("lr") == "lr"
    assert cfg.get("micro_batch") == 2 and cfg.get("max_grad_norm") == 0.1
    assert cfg.facts["lr"].where == "Namespace"


def test_ms_swift_arguments_with_an_fsdp_config_dict_inside() -> None:
    text = "\n".join([
        "[INFO:swift] args: SftArguments(",
        "attn_impl=flash_attention_2,",
        "fsdp=full_shard auto_wrap,",
        "fsdp_config={'fsdp_version': 2, 'reshard_after_forward': False, 'activation_checkpointing': False},",
        "max_length=16384,",
        "tuner_type=full,",
        ")"])
    cfg = runconfig.read(text)
    assert cfg.get("attention") == "flash_attention_2"
    assert cfg.get("fsdp") == "full_shard" and cfg.get("fsdp_version") == 2
    assert cfg.get("reshard") is False and cfg.key("reshard") == "reshard_after_forward"
    assert cfg.get("activation_checkpointing") is False
    assert cfg.get("seq_len") == 16384 and cfg.key("seq_len") == "max_length"
    assert cfg.get("tuner") == "full"


def test_deepspeed_dotted_dump_and_json() -> None:
    text = "\n".join([
        "[INFO] [config.py:1001:print]   gradient_accumulation_steps .. 4",
        "[INFO] [config.py:1001:print]   gradient_clipping ............ 1.0",
        "[INFO] [config.py:1001:print]   zero_optimization_stage ...... 3",
        "{", '    "train_micro_batch_size_per_gpu": 2, ', '    "bf16": {', '        "enabled": true', "    }, ",
        '    "zero_optimization": {', '        "stage": 3, ', '        "overlap_comm": true', "    }", "}"])
    cfg = runconfig.read(text)
    assert cfg.get("grad_accum") == 4 and cfg.get("max_grad_norm") == 1.0 and cfg.get("zero_stage") == 3
    assert cfg.get("micro_batch") == 2 and cfg.facts["micro_batch"].where == "JSON config"
    assert cfg.precision == "bf16"


def test_deepspeed_json_alone_gives_the_zero_stage() -> None:
    cfg = runconfig.read('{\n  "zero_optimization": {\n    "stage": 2,\n    "overlap_comm": true\n  }\n}')
    assert cfg.get("zero_stage") == 2


def test_megatron_dump_and_dashed_command_line() -> None:
    dump = "\n".join(["  checkpoint_activations .......................... False",
                      "  clip_grad ....................................... 1.0",
                      "  lr .............................................. 1e-05",
                      "  micro_batch_size ................................ 1",
                      "  recompute_granularity ........................... full",
                      "  seq_length ...................................... 2048"])
    cfg = runconfig.read(dump)
    assert cfg.get("grad_checkpointing") is True  # recompute on: either name turning it on turns it on
    assert cfg.get("max_grad_norm") == 1.0 and cfg.get("lr") == 1e-05 and cfg.get("seq_len") == 2048
    line = "torchrun pretrain_gpt.py --micro-batch-size 4 --seq-length 4096 --lr 3e-4 --zero-stage=2 --bf16"
    cl = runconfig.read(line)
    assert cl.get("micro_batch") == 4 and cl.key("micro_batch") == "micro_batch_size"
    assert cl.get("seq_len") == 4096 and cl.get("lr") == 3e-4 and cl.get("zero_stage") == 2
    assert cl.facts["lr"].where == "command line"


def test_yaml_config_llamafactory_and_axolotl() -> None:
    text = "\n".join(["cutoff_len: 4096", "per_device_train_batch_size: 8", "flash_attn: fa2",
                      "finetuning_type: lora", "learning_rate: 1.0e-4",
                      "deepspeed: examples/deepspeed/ds_z3_config.json"])
    cfg = runconfig.read(text)
    assert cfg.get("seq_len") == 4096 and cfg.key("seq_len") == "cutoff_len"
    assert cfg.get("micro_batch") == 8 and cfg.get("attention") == "fa2" and cfg.get("tuner") == "lora"
    assert cfg.get("lr") == 1e-4 and cfg.get("zero_stage") == 3
    axo = runconfig.read("sequence_len: 2048\nmicro_batch_size: 2\nflash_attention: true\nload_in_4bit: true\n")
    assert axo.get("seq_len") == 2048 and axo.get("attention") == "flash" and axo.quantized is True


def test_the_trainers_dump_beats_a_banner_and_the_command_line() -> None:
    text = "\n".join(["  max_length             = 4096", "python sft.py --max_length 8192",
                      "TrainingArguments(", "max_length=16384,", ")"])
    cfg = runconfig.read(text)
    assert cfg.get("seq_len") == 16384 and cfg.facts["seq_len"].where == "TrainingArguments"


def test_metric_rows_are_not_configuration() -> None:
    text = ("{'loss': 1.5071, 'grad_norm': 7.7, 'learning_rate': 4.1e-06, 'epoch': 0.04}\nStep 3: loss=2.1, lr=7\n"
            "{'loss': 'nan', 'grad_norm': 'nan', 'learning_rate': '0.002317', 'epoch': '0.5'}\n"
            "{'grad_norm': 1.2, 'learning_rate': 3e-4}\n"
            "INFO:root:[1,  50/ 2562] - Autoencoder Loss (total): 236.051 - [lr: 7.50e-05]")
    assert facts(text) == {}


def test_a_framework_warning_is_kept_as_advice_with_the_value_it_advises() -> None:
    text = ("[WARNING:swift] gradient_checkpointing is enabled with FSDP2. For better performance, consider using "
            "activation_checkpointing in fsdp_config instead. "
            'Add "activation_checkpointing": true to your fsdp_config.')
    [advice] = runconfig.read(text).advice
    assert advice.fact == "activation_checkpointing" and advice.value is True
    assert advice.text.startswith("gradient_checkpointing is enabled")  # the log prefix is cut
    hf = ("When using FSDP full shard, instead of using `gradient_checkpointing` in TrainingArguments, please use "
          "`activation_checkpointing` in `fsdp_config`.")
    assert [a.fact for a in runconfig.read(hf + "\n" + hf).advice] == ["activation_checkpointing"]
    assert runconfig.read("the model was loaded in 2.3 s; consider a coffee").advice == []


def test_one_name_with_two_values_at_the_same_trust_is_left_unknown() -> None:
    text = "\n".join(["  actor: {'optim': {'lr': 3e-07,", "  critic: {'optim': {'lr': 1e-05,"])
    assert runconfig.read(text).get("lr") is None
    assert runconfig.read(text + "\nTrainingArguments(\nlearning_rate=2e-5,\n)").get("lr") == 2e-5


def test_words_that_are_not_the_fact_are_left_out() -> None:
    cfg = runconfig.read('aio_config .... {\'block_size\': 1048576}\n"tuner_type": "gridsearch",\n'
                         "optimizer=OptimizerConfig(name=adamw)")
    assert cfg.get("seq_len") is None and cfg.get("tuner") is None and cfg.get("optimizer") is None


def test_an_fsdp_settings_repr_is_not_fsdp_in_use_and_is_shown_by_value() -> None:
    """OLMo-style TrainConfig prints `fsdp=FSDPConfig(...)` whatever the strategy: FSDP's settings, not a
    statement that it is on. A fact whose logged text is a repr cut at its first comma is shown by value."""
    cfg = runconfig.read("TrainConfig(distributed_strategy='ddp', fsdp=FSDPConfig(use_orig_params=True, "
                         "sharding_strategy=<ShardingStrategy.FULL_SHARD: 1>), max_grad_norm=1.0, "
                         "learning_rate=0.0006)")
    assert cfg.get("fsdp") is None
    assert cfg.get("max_grad_norm") == 1.0 and cfg.shown("max_grad_norm") == "1.0"
    f = runconfig.Fact("on", "fsdp", "log line", logged="FSDPConfig(use_orig_params=True")
    assert f.logged == ""
