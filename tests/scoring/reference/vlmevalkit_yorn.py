"""VLMEvalKit's yes/no extraction, verbatim.

Source: github.com/open-compass/VLMEvalKit, commit c026693a1cdac9292447eb480579dc2e11fb6f1c:
``vlmeval/smp/misc.py::process_punctuation`` and ``vlmeval/dataset/utils/yorn.py::
YOrN_Extraction`` (unchanged at e8e78f05 but for imports). Licence: Apache-2.0.
"""


# fmt: off
def process_punctuation(inText):
    import re
    outText = inText
    punct = [
        ';', r'/', '[', ']', '"', '{', '}', '(', ')', '=', '+', '\\', '_', '-',
        '>', '<', '@', '`', ',', '?', '!'
    ]
    commaStrip  = re.compile(r'(\d)(,)(\d)')
    periodStrip = re.compile(r'(?<!\d)\.(?!\d)')
    for p in punct:
        if (p + ' ' in inText or ' ' + p in inText) or (re.search(
                commaStrip, inText) is not None):
            outText = outText.replace(p, '')
        else:
            outText = outText.replace(p, ' ')
    outText = periodStrip.sub('', outText, re.UNICODE)
    return outText


def YOrN_Extraction(output):
    s = output.lower()
    words = process_punctuation(s).split()
    if 'yes' in words and 'no' not in words:
        return 'Yes'
    if 'yes' not in words and 'no' in words:
        return 'No'
    return 'Unknown'
