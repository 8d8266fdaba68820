"""Native tests of the format (`python3 -m unittest`): no WebAssembly needed."""

import unittest
from pathlib import Path

import chatlog

SAMPLE = Path(__file__).parent / "fixtures" / "sample.chatlog"


class ChatlogTest(unittest.TestCase):
    def test_the_sample_is_two_pairs(self):
        chat = chatlog.parse(SAMPLE.read_text())
        self.assertEqual(len(chat.pairs), 2)
        self.assertEqual(len(chat.pairs[1].answers), 2)
        self.assertGreaterEqual(chatlog.sniff(SAMPLE.read_bytes(), SAMPLE.name), 50)

    def test_other_formats_are_not_claimed(self):
        self.assertLess(chatlog.sniff(b'[{"mapping": {}}]', "conversations.json"), 50)
        with self.assertRaises(chatlog.NotThisFormat):
            chatlog.parse("")


if __name__ == "__main__":
    unittest.main()
