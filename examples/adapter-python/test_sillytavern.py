"""Native tests of the format (`python3 -m unittest`): no WebAssembly needed."""

import unittest
from pathlib import Path

import sillytavern

FIXTURE = Path(__file__).parent / "fixtures" / "Seraphina - 2024-05-01@10h00m00s.jsonl"


class SillyTavernTest(unittest.TestCase):
    def test_the_fixture(self):
        chat = sillytavern.parse(FIXTURE.read_text())
        self.assertEqual(chat.character, "Seraphina")
        self.assertEqual(len(chat.pairs), 3)
        self.assertEqual(chat.pairs[0].model, "gpt-4o")
        self.assertEqual(chat.skipped, {"greeting-before-first-question": 1, "system-message": 1, "alternate-swipe": 2})
        self.assertGreaterEqual(sillytavern.sniff(FIXTURE.read_bytes(), FIXTURE.name), 50)

    def test_times(self):
        self.assertEqual(sillytavern.seconds("May 1, 2024 10:00am"), 1714557600)
        self.assertEqual(sillytavern.seconds("May 1, 2024 1:05pm"), 1714557600 + 3 * 3600 + 5 * 60)
        self.assertEqual(sillytavern.seconds("May 1, 2024 12:00am"), 1714557600 - 10 * 3600)
        self.assertEqual(sillytavern.seconds("2024-05-01T10:00:00.000Z"), 1714557600)
        self.assertEqual(sillytavern.seconds("2024-05-01@10h00m00s"), 1714557600)
        self.assertEqual(sillytavern.seconds(1714557600000), 1714557600)
        self.assertIsNone(sillytavern.seconds("yesterday"))

    def test_not_this_format(self):
        self.assertLess(sillytavern.sniff(b'[{"mapping": {}}]', "conversations.json"), 50)
        with self.assertRaises(sillytavern.NotThisFormat):
            sillytavern.parse("")


if __name__ == "__main__":
    unittest.main()
