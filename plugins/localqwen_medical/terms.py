"""The plugin's word lists, Chinese and English: colloquial phrases and their medical terms (the
query rewrite's fallback when no model, or a small one, is used), the special-population words a
rewrite must never drop, and the cue words the intent router's rules look for.

Curated by hand for this project. Keep the lists short and specific: a cue word that is common in
everyday talk ("tired", "head") makes the router send chit-chat down the medical path, which is
safe but slow; a colloquial phrase whose medical term is ambiguous does not belong here."""

from __future__ import annotations

# colloquial -> medical term. Longer phrases are matched first, so "拉肚子" wins over "肚子".
COLLOQUIAL_ZH: dict[str, str] = {
    "拉肚子": "腹泻", "闹肚子": "腹泻", "拉稀": "腹泻", "跑肚": "腹泻",
    "肚子疼": "腹痛", "肚子痛": "腹痛", "胃疼": "胃痛", "心口疼": "胸痛", "胸口疼": "胸痛", "胸口痛": "胸痛",
    "发烧": "发热", "发高烧": "高热", "高烧": "高热", "低烧": "低热", "烧到": "体温达到",
    "头疼": "头痛", "脑袋疼": "头痛", "偏头疼": "偏头痛", "头晕眼花": "眩晕", "头昏": "头晕",
    "嗓子疼": "咽痛", "喉咙痛": "咽痛", "嗓子哑": "声音嘶哑", "流鼻涕": "流涕", "鼻子不通": "鼻塞",
    "拉不出来": "便秘", "大便干": "便秘", "拉血": "便血", "尿血": "血尿", "尿急尿痛": "尿路刺激征",
    "想吐": "恶心", "反胃": "恶心", "吐了": "呕吐", "烧心": "胃灼热", "打嗝": "呃逆",
    "心慌": "心悸", "心跳快": "心动过速", "喘不上气": "呼吸困难", "喘不过气": "呼吸困难", "憋气": "呼吸困难",
    "睡不着": "失眠", "起疹子": "皮疹", "起疙瘩": "皮疹", "长痘痘": "痤疮", "青春痘": "痤疮",
    "抽筋": "肌肉痉挛", "腿抽筋": "腓肠肌痉挛", "羊羔疯": "癫痫", "羊癫疯": "癫痫", "大脖子病": "甲状腺肿",
    "血压高": "高血压", "血糖高": "高血糖", "糖尿": "糖尿病", "大三阳": "乙肝大三阳",
    "来月经": "月经", "大姨妈": "月经", "没来月经": "闭经", "痛经": "痛经",
    "中风": "脑卒中", "心梗": "心肌梗死", "脑梗": "脑梗死", "老寒腿": "膝骨关节炎",
    "吃不下饭": "食欲不振", "没胃口": "食欲不振", "掉头发": "脱发", "出虚汗": "多汗",
}

COLLOQUIAL_EN: dict[str, str] = {
    "tummy ache": "abdominal pain", "stomach ache": "abdominal pain", "stomachache": "abdominal pain",
    "belly ache": "abdominal pain", "bellyache": "abdominal pain", "the runs": "diarrhea",
    "runny tummy": "diarrhea", "loose stools": "diarrhea", "throwing up": "vomiting", "threw up": "vomiting",
    "puking": "vomiting", "throw up": "vomiting", "feel sick to my stomach": "nausea", "queasy": "nausea",
    "heartburn": "gastroesophageal reflux", "high blood pressure": "hypertension",
    "low blood pressure": "hypotension", "high blood sugar": "hyperglycemia", "low blood sugar": "hypoglycemia",
    "sugar diabetes": "diabetes mellitus", "heart attack": "myocardial infarction", "stroke": "cerebral stroke",
    "sore throat": "pharyngitis", "runny nose": "rhinorrhea", "stuffy nose": "nasal congestion",
    "pink eye": "conjunctivitis", "shortness of breath": "dyspnea", "short of breath": "dyspnea",
    "can't breathe": "dyspnea", "racing heart": "palpitations", "heart racing": "palpitations",
    "dizzy": "dizziness", "lightheaded": "presyncope", "passed out": "syncope", "fainted": "syncope",
    "can't sleep": "insomnia", "trouble sleeping": "insomnia", "pins and needles": "paresthesia",
    "rash": "skin rash", "hives": "urticaria", "pimples": "acne", "zits": "acne", "charley horse": "muscle cramp",
    "leg cramps": "muscle cramps", "headache": "headache", "migraine": "migraine", "fever": "fever",
    "the flu": "influenza", "a cold": "common cold", "water pills": "diuretics", "blood thinner": "anticoagulant",
    "blood thinners": "anticoagulants", "painkiller": "analgesic", "painkillers": "analgesics",
    "peeing a lot": "polyuria", "burning when i pee": "dysuria", "blood in my pee": "hematuria",
    "blood in my stool": "hematochezia", "bloody stool": "hematochezia", "pregnant": "pregnant",
}

# Words that change what is safe (dose, drug choice): a rewrite keeps every one it finds.
SPECIAL_POPULATION_ZH = (
    "孕妇", "怀孕", "孕期", "孕早期", "孕中期", "孕晚期", "备孕", "哺乳期", "哺乳", "喂奶", "母乳",
    "儿童", "小孩", "孩子", "宝宝", "婴儿", "新生儿", "幼儿", "小儿", "青少年",
    "老人", "老年人", "老年", "高龄", "肝功能不全", "肾功能不全", "透析",
)
SPECIAL_POPULATION_EN = (
    "pregnant", "pregnancy", "trying to conceive", "breastfeeding", "breast-feeding", "nursing mother",
    "lactating", "child", "children", "kid", "kids", "toddler", "infant", "baby", "newborn", "neonate",
    "teenager", "adolescent", "elderly", "older adult", "senior", "aged", "kidney disease",
    "renal impairment", "liver disease", "hepatic impairment", "dialysis",
)

# ---------------------------------------------------------------- router cues
# Chinese: symptoms, body parts, diseases, drugs, care. Single characters only where they are
# (nearly) never used outside health talk in a question.
MEDICAL_ZH = (
    "痛", "疼", "痒", "肿", "咳", "喘", "吐", "泻", "晕", "麻", "抽筋", "出血", "流血", "发热", "发烧",
    "恶心", "呕", "腹", "胃", "肝", "肾", "肺", "心脏", "心肌", "心口", "胸", "脑", "骨", "关节", "腰椎", "颈椎",
    "皮肤", "皮炎", "眼", "耳", "鼻", "咽", "喉", "嗓子", "牙", "口腔", "舌", "脸", "痣", "疹", "疙瘩", "痘",
    "肚", "肛", "大便", "小便", "便秘", "便血", "尿", "膀胱", "前列腺", "子宫", "卵巢", "乳腺", "月经", "白带", "阴道", "外阴", "阴茎", "精子", "男科",
    "病", "症", "炎", "癌", "瘤", "癫痫", "结石", "囊肿", "溃疡", "感染", "病毒", "细菌", "糖尿", "血压", "血糖",
    "血脂", "血常规", "血小板", "红细胞", "白细胞", "淋巴", "转氨酶", "抗体", "阳性", "阴性", "指标", "偏高",
    "偏低", "检查", "化验", "体检", "药", "胶囊", "颗粒", "注射", "输液", "疫苗", "剂量", "副作用",
    "功效", "作用", "不良反应", "医", "诊", "治疗", "治愈", "怎么治", "手术", "术后", "住院", "挂号", "科室", "挂什么科", "护理",
    "调理", "保健", "康复", "怀孕", "孕", "胎", "分娩", "剖腹产", "哺乳", "婴儿", "宝宝", "新生儿", "过敏",
    "失眠", "焦虑", "抑郁", "忧郁", "减肥", "戒烟", "伤口", "愈合", "后遗症", "并发症", "脂肪", "铅", "汞",
    "口渴", "食欲", "疲劳", "乏力", "体温", "截瘫", "术", "疣", "癜", "臭", "发作", "风湿", "瘫", "痿", "骨折", "中风", "死亡", "健康", "营养",
)
# English cues match the start of a word ("allerg" -> allergic); a trailing "$" means the whole word
# only ("flu" but not "fluffy").
MEDICAL_EN = (
    "pain", "ache", "fever", "cough", "sore$", "rash", "itch", "swelling", "swollen", "bleed", "blood",
    "nausea", "vomit", "diarrhea", "diarrhoea", "constipat", "dizz", "headache", "migraine", "fatigue",
    "symptom", "disease", "disorder", "syndrome", "infection", "virus", "bacteria", "cancer", "tumor", "tumour",
    "diabetes", "hypertension", "asthma", "allerg", "injury", "fracture", "wound", "pregnan", "breastfeed",
    "drug", "medicine", "medication", "pill", "tablet", "capsule", "dose", "dosage", "mg$", "side effect",
    "prescri", "antibiotic", "vaccin", "doctor", "physician", "clinic", "hospital", "surgery", "treatment",
    "treat$", "therapy", "diagnos", "test result", "blood test", "x-ray", "scan$", "patient", "health",
    "heart$", "lung", "liver", "kidney", "stomach", "tummy", "belly", "bowel", "skin", "throat", "chest",
    "breath", "sleep", "insomnia", "anxiety", "depress", "cholesterol", "ibuprofen", "paracetamol",
    "acetaminophen", "aspirin", "penicillin", "amoxicillin", "insulin", "metformin", "warfarin", "statin",
    "steroid", "overdose", "poison", "stroke", "seizure", "faint", "numb", "vaccine", "flu$", "cold sore",
    "sick$", "ill$", "hurts", "hurt$", "heartburn", "painful", "medical", "nurse", "pharmac",
)
# Drug and disease name endings (English) that mark a medical question by themselves.
MEDICAL_SUFFIXES_EN = (
    "itis", "osis", "emia", "oma", "pathy", "algia", "ectomy", "cillin", "mycin", "cycline", "floxacin",
    "azole", "prazole", "statin", "olol", "pril", "sartan", "dipine", "profen", "mab", "vir", "tidine",
    "triptan", "azepam", "oxetine", "amine",
)

# Everyday words that contain a cue character but are not health talk; removed before matching.
NOT_MEDICAL_ZH = ("电脑", "方便", "便宜", "顺便", "随便", "照片", "阴天", "红烧", "炎热", "治理", "政治",
                  "发烧友", "眼镜蛇", "心疼钱",
                  "技术", "艺术", "美术", "算术", "魔术", "学术", "战术", "武术", "臭豆腐")

# Clear chit-chat cues. A turn is only "chat" when it has no medical cue at all.
CHAT_ZH = (
    "你好", "您好", "嗨", "早上好", "晚上好", "晚安", "谢谢", "多谢", "再见", "拜拜", "你是谁", "你叫什么",
    "天气", "笑话", "讲个", "聊聊", "无聊", "哈哈", "吃饭了吗", "周末", "电影", "音乐", "旅游", "推荐一本",
    "翻译", "写一首", "诗", "作业", "编程", "代码", "几点", "今天星期", "生日", "游戏", "做菜", "菜谱",
)
CHAT_EN = (
    "hello", "hi ", "hi!", "hey", "good morning", "good evening", "good night", "thanks", "thank you",
    "bye", "who are you", "what's your name", "what is your name", "weather", "joke", "bored", "movie",
    "music", "song", "poem", "recipe", "travel", "vacation", "weekend", "book", "translate", "code",
    "python", "what time", "birthday", "game", "how are you", "nice to meet", "tell me about yourself",
)
