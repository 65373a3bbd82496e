"""Tiny real Keras runs for the Keras adapters: CSVLogger files and `fit` console output.

Needs `pip install keras "jax[cpu]"` (no dataset download: the data is generated). Writes, in the
folder given (default: next to this script):
  csvlogger.csv      CSVLogger of a healthy run with ReduceLROnPlateau (epoch from 0, learning_rate column)
  fit_console.log    stdout of two fit() calls one after another: verbose=2, then a new model with verbose=1
  history.txt        `print(history.history)` of a third model fitted with verbose=0
Run: KERAS_BACKEND=jax python keras_tiny.py [OUT_DIR] > OUT_DIR/fit_console.log
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras
import numpy as np


def data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A learnable toy task: the class is which of 4 slices of the input has the largest sum."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1024, 16)).astype("float32")
    y = x.reshape(-1, 4, 4).sum(axis=2).argmax(axis=1)
    return x, y


def model(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    m = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(4, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    x, y = data(0)
    first = model(0)
    # the LR callback first, so that the learning_rate it logs is in the CSV's header
    callbacks = [keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1, min_delta=0.01),
                 keras.callbacks.CSVLogger(os.path.join(out, "csvlogger.csv"))]
    first.fit(x, y, validation_split=0.2, epochs=12, batch_size=32, verbose=2, callbacks=callbacks)
    second = model(1)  # a second training in the same script: its epochs start at 1 again
    second.fit(x, y, validation_split=0.2, epochs=6, batch_size=64, verbose=1)
    third = model(2)  # verbose=0: the History printout is the only record of this training
    history = third.fit(x, y, validation_split=0.2, epochs=4, batch_size=64, verbose=0)
    with open(os.path.join(out, "history.txt"), "w", encoding="utf-8") as f:
        print(history.history, file=f)


if __name__ == "__main__":
    main()
